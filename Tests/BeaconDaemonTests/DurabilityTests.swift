import BeaconProtocol
import BeaconTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("Persistence")
struct DurabilityTests {
    @Test("an answered Set survives SIGKILL right after the reply; ephemeral ones do not, and are replayed as deleted")
    func survivesKill() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        try client.set("keep.me", ["n": 1])
        let ephemeralVersion = try client.set("gone.after.restart", 1, ephemeral: true)
        var last: Int64 = 0
        for index in 0..<50 {
            last = try client.set("burst.\(index % 5)", .int(Int64(index)))
        }
        daemon.kill()

        try daemon.start()
        let again = try daemon.connect()
        let kept = try again.parameters("io.beacon.Properties.Get", ["key": "keep.me"])
        #expect(kept["property"]?["value"] == ["n": 1])
        let burst = try again.parameters("io.beacon.Properties.Get", ["key": "burst.4"])
        #expect(burst["property"]?["value"] == 49)
        #expect(burst["property"]?["version"]?.intValue == last)
        let ephemeral = try again.call("io.beacon.Properties.Get", ["key": "gone.after.restart"])
        #expect(ephemeral.error == "io.beacon.Properties.KeyNotFound")

        // Versions continue above everything handed out before the kill.
        let next = try again.set("after.restart", 1)
        #expect(next > last)

        // A watcher that saw the ephemeral property learns of its deletion.
        let replay = try again.call(
            "io.beacon.Properties.Watch",
            ["patterns": ["gone.**"], "since": .int(ephemeralVersion)],
            more: true
        )
        let changes = replay["changes"]?.elements ?? []
        #expect(changes.count == 1)
        #expect(changes.first?["key"] == "gone.after.restart")
        #expect(changes.first?["deleted"] == true)
    }

    @Test("Sets written back to back, several of one key, survive SIGKILL after their replies with the last values")
    func pipelinedSetsSurviveKill() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        try client.set("switch.me", 0)
        var bytes: [UInt8] = []
        func append(_ key: String, _ value: Int64, ephemeral: Bool = false) {
            var parameters: [String: JSONValue] = ["key": .string(key), "value": .int(value)]
            if ephemeral { parameters["ephemeral"] = true }
            VarlinkCall(method: "io.beacon.Properties.Set", parameters: parameters).encode(into: &bytes)
        }
        // One write, read in one tick: the rows of a key are written several times in one transaction.
        for index in 0..<30 {
            append("pipelined.\(index % 3)", Int64(index))
        }
        append("switch.me", 1)
        append("switch.me", 2, ephemeral: true)
        append("switch.me", 3)
        append("switch.me", 4)
        append("to.ephemeral", 1)
        append("to.ephemeral", 2, ephemeral: true)
        #expect(client.sendRaw(bytes))
        var versions: [Int64] = []
        for _ in 0..<36 {
            let reply = try client.receive()
            versions.append(try #require(reply["version"]?.intValue))
        }
        daemon.kill()

        try daemon.start()
        let again = try daemon.connect()
        for index in 27..<30 {
            let property = try again.parameters("io.beacon.Properties.Get", ["key": .string("pipelined.\(index % 3)")])
            #expect(property["property"]?["value"]?.intValue == Int64(index))
            #expect(property["property"]?["version"]?.intValue == versions[index])
        }
        let switched = try again.parameters("io.beacon.Properties.Get", ["key": "switch.me"])
        #expect(switched["property"]?["value"] == 4)
        #expect(switched["property"]?["version"]?.intValue == versions[33])
        #expect(switched["property"]?["ephemeral"] == false)
        let ephemeral = try again.call("io.beacon.Properties.Get", ["key": "to.ephemeral"])
        #expect(ephemeral.error == "io.beacon.Properties.KeyNotFound")
    }

    @Test("the store is SQLite in WAL mode at the state path, private to the user")
    func storeLocation() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        try client.set("x", 1)
        let status = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        let path = daemon.directory + "/state/beacon/store.sqlite"
        #expect(status["store"]?.stringValue == path)
        #expect(access(path + "-wal", F_OK) == 0)
        var info = stat()
        #expect(stat(daemon.directory + "/state/beacon", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(stat(daemon.socketPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(daemon.terminate() == 0)
        #expect(access(daemon.socketPath, F_OK) != 0)
    }
}
