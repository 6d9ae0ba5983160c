import BeaconProtocol
import BeaconTestSupport
import Testing

@Suite("Slow subscribers")
struct SlowSubscriberTests {
    static let payload = JSONValue.string(String(repeating: "p", count: 2000))

    /// Sets `rounds` values over `keys` keys while the watcher does not read.
    static func flood(_ client: VarlinkTestClient, rounds: Int, keys: Int) throws -> [String: Int64] {
        var bytes: [UInt8] = []
        var last: [String: Int64] = [:]
        for index in 0..<rounds {
            let key = "flood.k\(index % keys)"
            VarlinkCall(
                method: "io.beacon.Properties.Set",
                parameters: ["key": .string(key), "value": ["i": .int(Int64(index)), "pad": payload]]
            ).encode(into: &bytes)
            last[key] = Int64(index)
        }
        client.sendRaw(bytes)
        for _ in 0..<rounds {
            guard try client.receive().error == nil else { throw TestFailure("Set failed") }
        }
        return last
    }

    @Test("a watcher that does not read gets changes coalesced per key, with an overflow count")
    func coalesce() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-queued-bytes", "8192"])
        let watcher = try daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["flood.**"], "old": true], more: true)
        let writer = try daemon.connect()
        let last = try Self.flood(writer, rounds: 3000, keys: 4)
        // A marker after the flood: once it arrives, everything before it has been delivered.
        try writer.set("flood.marker", true)

        var latest: [String: Int64] = [:]
        var overflow: Int64 = 0
        var received = 0
        while latest["flood.marker"] == nil {
            let reply = try watcher.receive()
            #expect(reply.error == nil)
            overflow += reply["overflow"]?.intValue ?? 0
            for change in reply["changes"]?.elements ?? [] {
                received += 1
                let key = change["key"]?.stringValue ?? ""
                latest[key] = change["value"]?["i"]?.intValue ?? (key == "flood.marker" ? 1 : -1)
            }
        }
        for (key, index) in last {
            #expect(latest[key] == index, "\(key) must end at its last value")
        }
        #expect(overflow > 0)
        #expect(received + Int(overflow) == 3001)
    }

    @Test("an observer that does not read loses notifications and is told how many")
    func dropNotifications() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-queued-bytes", "8192"])
        let observer = try daemon.connect()
        _ = try observer.call("io.beacon.Notifications.Observe", ["patterns": ["n.**"]], more: true)
        let poster = try daemon.connect()
        var bytes: [UInt8] = []
        let count = 3000
        for index in 0..<count {
            VarlinkCall(
                method: "io.beacon.Notifications.Post",
                parameters: ["name": "n.x", "userInfo": ["i": .int(Int64(index)), "pad": Self.payload]]
            ).encode(into: &bytes)
        }
        poster.sendRaw(bytes)
        for _ in 0..<count { _ = try poster.receive() }

        // Reading drains the queue; the count of what was dropped follows what was delivered.
        var delivered = 0
        var overflow: Int64 = 0
        var lastIndex: Int64 = -1
        while overflow == 0 {
            let reply = try observer.receive()
            overflow += reply["overflow"]?.intValue ?? 0
            for notification in reply["notifications"]?.elements ?? [] {
                delivered += 1
                let index = notification["userInfo"]?["i"]?.intValue ?? -1
                #expect(index > lastIndex, "notifications stay in order")
                lastIndex = index
            }
        }
        // Once the observer keeps up again, notifications flow again.
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "n.end"])
        let end = try observer.receiveItems("notifications", count: 1)
        #expect(end.first?["name"] == "n.end")
        #expect(overflow > 0)
        #expect(delivered + Int(overflow) == count)
    }

    @Test("with slowSubscriber=disconnect a watcher that does not read is disconnected")
    func disconnect() throws {
        let daemon = try TestDaemon(arguments: [
            "--limits-max-queued-bytes", "8192", "--limits-slow-subscriber", "disconnect",
        ])
        let watcher = try daemon.connect()
        try watcher.set("presence.slow", true, ephemeral: true)
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["flood.**"]], more: true)
        let presence = try daemon.connect()
        _ = try presence.call("io.beacon.Properties.Watch", ["patterns": ["presence.**"]], more: true)
        let writer = try daemon.connect()
        _ = try Self.flood(writer, rounds: 3000, keys: 4)
        #expect(watcher.waitForClose())
        #expect(daemon.log.contains("disconnecting a slow subscriber"))
        // The disconnected watcher's ephemeral property goes away like on any close.
        let deleted = try presence.receiveItems("changes", count: 1)
        #expect(deleted.first?["key"] == "presence.slow")
        #expect(deleted.first?["deleted"] == true)
        // The writer is unaffected.
        try writer.set("flood.after", 1)
    }
}
