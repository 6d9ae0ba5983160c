import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// Suspension of delivery: by the session (python-dbusmock's logind), by the client, per policy.
@Suite("Delivery policies and suspension", .serialized)
struct DeliveryPolicyTests {
    /// Starts an Observe of `patterns` and returns its connection, after the first reply.
    static func observe(
        _ daemon: TestDaemon, _ patterns: [String] = ["x.**"], policy: String? = nil, followsSession: Bool = false,
        object: String? = nil
    ) throws -> VarlinkTestClient {
        let client = try daemon.connect()
        var parameters: [String: JSONValue] = ["patterns": .array(patterns.map { .string($0) })]
        if let policy { parameters["whileSuspended"] = .string(policy) }
        if followsSession { parameters["suspendWhileInactive"] = true }
        if let object { parameters["object"] = .string(object) }
        let first = try client.call("io.beacon.Notifications.Observe", parameters, more: true)
        guard first.error == nil else { throw TestFailure("Observe failed: \(first)") }
        return client
    }

    /// The connections running a stream, by connection number, as the daemon's Clients reports them.
    static func streams(_ daemon: TestDaemon) throws -> [[String: JSONValue]] {
        let clients = try daemon.connect().parameters("io.beacon.Daemon.Clients")["clients"]?.elements ?? []
        return clients.map(\.members).filter { $0["stream"] != nil }
    }

    /// The names of the notifications of one reply.
    static func names(_ reply: VarlinkReply) -> [String] {
        (reply["notifications"]?.elements ?? []).compactMap { $0["name"]?.stringValue }
    }

    @Test("a locked session: drop delivers nothing, coalesce one message of the latest of each name, hold all in order")
    func sessionLock() throws {
        let fixture = try LifecycleTests.Fixture()
        try fixture.waitForBridge()
        try fixture.waitForSessionState()
        let daemon = fixture.daemon
        let drop = try Self.observe(daemon, policy: "drop", followsSession: true)
        let coalesce = try Self.observe(daemon, policy: "coalesce", followsSession: true)
        let hold = try Self.observe(daemon, policy: "hold", followsSession: true)
        let immediate = try Self.observe(daemon, policy: "deliverImmediately", followsSession: true)
        let unsuspended = try Self.observe(daemon, policy: "drop")
        let state = try daemon.connect()
        _ = try state.call("io.beacon.Properties.Watch", ["patterns": ["lifecycle.state"]], more: true)

        try fixture.logind.callSession("c1", "Lock")
        #expect(try state.receiveItems("changes", count: 1).first?["value"] == "inactive")
        let poster = try daemon.connect()
        var posted: [Int64] = []
        for index in 0..<10_000 {
            let reply = try poster.parameters("io.beacon.Notifications.Post", ["name": .string("x.n\(index % 10)")])
            posted.append(reply["sequence"]?.intValue ?? -1)
        }
        // Each Post is answered after its tick was delivered: what the suspended observers kept is settled.
        let suspended = try Self.streams(daemon).filter {
            $0["followsSession"] == true && $0["policy"] != "deliverImmediately"
        }
        #expect(suspended.allSatisfy { $0["suspended"] == true })
        #expect(Set(suspended.compactMap { $0["policy"]?.stringValue }) == ["drop", "coalesce", "hold"])
        for stream in suspended {
            switch stream["policy"]?.stringValue {
            case "drop": #expect(stream["held"] == 0 && stream["dropped"] == 10_000)
            case "coalesce": #expect(stream["held"] == 10)
            default: #expect(stream["held"] == 10_000)
            }
        }
        // Never suspended: everything arrived during the lock, as did the unsuspended observer's.
        #expect(try immediate.receiveItems("notifications", count: 10_000).count == 10_000)
        #expect(try unsuspended.receiveItems("notifications", count: 10_000).count == 10_000)

        try fixture.logind.callSession("c1", "Unlock")
        #expect(try state.receiveItems("changes", count: 1).first?["value"] == "active")
        let coalesced = try coalesce.receive()
        #expect(Self.names(coalesced) == (0..<10).map { "x.n\($0)" })
        let latest = (coalesced["notifications"]?.elements ?? []).compactMap { $0["sequence"]?.intValue }
        #expect(latest == Array(posted.suffix(10)), "the last post of each name, in order")
        let held = try hold.receive()
        let sequences = (held["notifications"]?.elements ?? []).compactMap { $0["sequence"]?.intValue }
        // Compared as a whole, reported briefly: a failure should not print ten thousand numbers.
        let same = sequences == posted
        #expect(same, "one message, every notification once, in order: \(sequences.count) of \(posted.count)")
        // The drop observer's next reply is the next post: nothing of the lock was kept for it.
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "x.after"])
        #expect(Self.names(try drop.receive()) == ["x.after"])
        #expect(Self.names(try coalesce.receive()) == ["x.after"])
        #expect(Self.names(try hold.receive()) == ["x.after"])
    }

    @Test("a deliverImmediately post reaches a suspended observer at once, after what it held, and it stays suspended")
    func deliverImmediately() throws {
        let daemon = try TestDaemon()
        let observer = try Self.observe(daemon, policy: "hold")
        observer.send("io.beacon.Suspend", oneway: true)
        let poster = try daemon.connect()
        try waitUntil("the suspension", within: .seconds(10)) {
            try Self.streams(daemon).first?["suspended"] == true
        }
        for index in 0..<5 {
            _ = try poster.parameters("io.beacon.Notifications.Post", ["name": .string("x.held\(index)")])
        }
        _ = try poster.parameters(
            "io.beacon.Notifications.Post", ["name": "x.urgent", "deliverImmediately": true, "object": "door"])
        let reply = try observer.receive()
        #expect(Self.names(reply) == ["x.held0", "x.held1", "x.held2", "x.held3", "x.held4", "x.urgent"])
        #expect(reply["notifications"]?.elements.last?["object"] == "door")
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "x.later"])
        #expect(try Self.streams(daemon).first?["held"] == 1)
        observer.send("io.beacon.Resume", oneway: true)
        #expect(Self.names(try observer.receive()) == ["x.later"])
    }

    @Test(
        "held events count against the uid's maxBytesPerUid; a hold that lost one keeps nothing more, so the gap is exact"
    )
    func heldBytesBudget() throws {
        // Each observer may hold 256 KiB, the uid 512 KiB in all: four suspended observers cannot hold everything.
        let daemon = try TestDaemon(arguments: [
            "--limits-max-queued-bytes", "262144", "--limits-max-bytes-per-uid", "524288",
        ])
        let observers = try (0..<4).map { _ in try Self.observe(daemon, policy: "hold") }
        for observer in observers { observer.send("io.beacon.Suspend", oneway: true) }
        try waitUntil("four suspensions", within: .seconds(10)) {
            try Self.streams(daemon).filter { $0["suspended"] == true }.count == 4
        }
        // 60 posts of about 10 KB: 600 KB for each observer, 2.4 MB for the four without a budget. Post 40 is a small
        // one: a hold that lost a large one before it must not keep it.
        let poster = try daemon.connect()
        let filler = String(repeating: "x", count: 10_000)
        var first: Int64 = 0
        for index in 0..<60 {
            let userInfo: JSONValue = index == 40 ? ["small": true] : ["filler": .string(filler)]
            let posted = try poster.parameters(
                "io.beacon.Notifications.Post", ["name": .string("x.n\(index)"), "userInfo": userInfo])
            if index == 0 { first = try #require(posted["sequence"]?.intValue) }
        }
        var heldInAll = 0
        for observer in observers {
            observer.send("io.beacon.Resume", oneway: true)
            let reply = try observer.receive()
            let names = Self.names(reply)
            heldInAll += names.count
            // Kept: the posts from the first on, without a gap; lost: every one after the first lost.
            #expect(names == (0..<names.count).map { "x.n\($0)" })
            #expect(reply["overflow"]?.intValue == Int64(60 - names.count), "\(names.count) delivered")
            #expect(reply["sequence"]?.intValue == first + Int64(names.count) - 1)
            #expect(names.count < 26, "the observer's own limit of 256 KiB")
        }
        #expect(heldInAll > 0)
        #expect(heldInAll * 10_000 <= 524_288, "the uid's budget covers what its observers hold")
        // The budget was given back: every observer holds its share again.
        for observer in observers { observer.send("io.beacon.Suspend", oneway: true) }
        try waitUntil("four suspensions", within: .seconds(10)) {
            try Self.streams(daemon).filter { $0["suspended"] == true }.count == 4
        }
        _ = try poster.parameters(
            "io.beacon.Notifications.Post", ["name": "x.again", "userInfo": ["filler": .string(filler)]])
        for observer in observers {
            observer.send("io.beacon.Resume", oneway: true)
            let reply = try observer.receive()
            #expect(Self.names(reply) == ["x.again"])
            #expect(reply["overflow"] == nil)
        }
    }

    @Test("Suspend and Resume nest; the object filter; suspended and active observers of the same names")
    func nestingAndObjects() throws {
        let daemon = try TestDaemon()
        let suspended = try Self.observe(daemon, policy: "hold")
        let active = try Self.observe(daemon)
        let doorOnly = try Self.observe(daemon, object: "door")
        suspended.send("io.beacon.Suspend", oneway: true)
        suspended.send("io.beacon.Suspend", oneway: true)
        let poster = try daemon.connect()
        try waitUntil("two suspensions", within: .seconds(10)) {
            try Self.streams(daemon).contains { $0["suspensions"] == 2 }
        }
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "x.a", "object": "door"])
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "x.b", "object": "window"])
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "x.c"])
        #expect(
            try active.receiveItems("notifications", count: 3).compactMap { $0["name"]?.stringValue } == [
                "x.a", "x.b", "x.c",
            ])
        let doors = try doorOnly.receive()
        #expect(Self.names(doors) == ["x.a"])
        #expect(doors["notifications"]?.elements.first?["object"] == "door")

        // One Resume of two: still suspended.
        suspended.send("io.beacon.Resume", oneway: true)
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "x.d"])
        #expect(Self.names(try active.receive()) == ["x.d"])
        #expect(try Self.streams(daemon).contains { $0["suspensions"] == 1 && $0["held"] == 4 })
        suspended.send("io.beacon.Resume", oneway: true)
        #expect(Self.names(try suspended.receive()) == ["x.a", "x.b", "x.c", "x.d"])
        // A Resume too many is an error for a call that waits for its answer.
        let extra = try daemon.connect().call("io.beacon.Resume")
        #expect(extra.error == "io.beacon.NotSuspended")
        #expect(Self.names(try doorOnly.receiveAfterPosting(poster, ["name": "x.e", "object": "door"])) == ["x.e"])
    }

    @Test("a suspended Watch with coalesce gets one change per key on Resume, latest value and earliest old")
    func watchCoalesce() throws {
        let daemon = try TestDaemon()
        let writer = try daemon.connect()
        try writer.set("k.a", 0)
        let watcher = try daemon.connect()
        _ = try watcher.call(
            "io.beacon.Properties.Watch", ["patterns": ["k.**"], "old": true, "whileSuspended": "coalesce"],
            more: true)
        watcher.send("io.beacon.Suspend", oneway: true)
        try waitUntil("the suspension", within: .seconds(10)) { try Self.streams(daemon).first?["suspended"] == true }
        for value in 1...5 { try writer.set("k.a", .int(Int64(value))) }
        try writer.set("k.b", "x")
        watcher.send("io.beacon.Resume", oneway: true)
        let changes = try watcher.receive()["changes"]?.elements ?? []
        #expect(changes.map { $0["key"] } == ["k.a", "k.b"])
        #expect(changes.first?["value"] == 5)
        #expect(changes.first?["old"] == 0)
    }

    @Test("a Watch resumed by the session while it still owes a slow reader a backlog ends at each key's latest value")
    func resumeBehindBacklog() throws {
        let fixture = try LifecycleTests.Fixture(arguments: ["--limits-max-queued-bytes", "8192"])
        try fixture.waitForBridge()
        try fixture.waitForSessionState()
        let daemon = fixture.daemon
        let watcher = try daemon.connect()
        _ = try watcher.call(
            "io.beacon.Properties.Watch",
            ["patterns": ["flood.**"], "whileSuspended": "coalesce", "suspendWhileInactive": true], more: true)
        let state = try daemon.connect()
        _ = try state.call("io.beacon.Properties.Watch", ["patterns": ["lifecycle.state"]], more: true)
        let writer = try daemon.connect()
        // The watcher reads nothing: its output fills and the daemon keeps a backlog for it.
        _ = try SlowSubscriberTests.flood(writer, rounds: 2000, keys: 4)
        try fixture.logind.callSession("c1", "Lock")
        #expect(try state.receiveItems("changes", count: 1).first?["value"] == "inactive")
        // Other values of the same keys, kept while the session is inactive.
        let last = try SlowSubscriberTests.flood(writer, rounds: 8, keys: 4)
        try fixture.logind.callSession("c1", "Unlock")
        #expect(try state.receiveItems("changes", count: 1).first?["value"] == "active")
        try writer.set("flood.marker", true)

        var latest: [String: Int64] = [:]
        while latest["flood.marker"] == nil {
            let reply = try watcher.receive()
            #expect(reply.error == nil)
            for change in reply["changes"]?.elements ?? [] {
                let key = change["key"]?.stringValue ?? ""
                latest[key] = change["value"]?["i"]?.intValue ?? (key == "flood.marker" ? 1 : -1)
            }
        }
        for (key, index) in last {
            #expect(latest[key] == index, "\(key) must end at its last value")
        }
    }
}

extension VarlinkTestClient {
    /// The next reply after `poster` posted `parameters`.
    func receiveAfterPosting(_ poster: VarlinkTestClient, _ parameters: [String: JSONValue]) throws -> VarlinkReply {
        _ = try poster.parameters("io.beacon.Notifications.Post", parameters)
        return try receive()
    }
}
