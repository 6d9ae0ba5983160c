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
