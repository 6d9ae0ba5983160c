import BeaconProtocol
import Testing

@testable import BeaconDaemon

/// The fan-out in process: suspended `drop` subscriptions leave the selection, share a group per kind, patterns and
/// object, keep exact dropped counts, still get `deliverImmediately` posts, and come back on Resume.
@Suite("FanOut: parked subscriptions and outboxes")
struct FanOutTests {
    static func observe(_ patterns: [String], policy: String, object: String? = nil) -> JSONValue {
        var parameters: [String: JSONValue] = [
            "patterns": .array(patterns.map { .string($0) }), "whileSuspended": .string(policy),
        ]
        if let object { parameters["object"] = .string(object) }
        return ["method": "io.beacon.Notifications.Observe", "more": true, "parameters": .object(parameters)]
    }

    static func post(_ name: String, object: String? = nil, immediately: Bool = false) -> JSONValue {
        var parameters: [String: JSONValue] = ["name": .string(name)]
        if let object { parameters["object"] = .string(object) }
        if immediately { parameters["deliverImmediately"] = true }
        return ["method": "io.beacon.Notifications.Post", "parameters": .object(parameters)]
    }

    static let suspend: JSONValue = ["method": "io.beacon.Suspend", "oneway": true]
    static let resume: JSONValue = ["method": "io.beacon.Resume", "oneway": true]

    /// The names of the notifications in the messages `client` was sent since the last read.
    static func names(_ client: InProcessBus.Client) throws -> [String] {
        try client.items("notifications")
            .compactMap { $0["name"]?.stringValue }
    }

    /// The bus's subscription of `client`, the last connected one when `nil`.
    static func subscription(_ bus: InProcessBus, _ index: Int) throws -> Subscription {
        let clients = bus.bus.clients.sorted { $0.key < $1.key }.map(\.value)
        return try #require(clients[index].subscription)
    }

    @Test("a suspended drop observer leaves the selection after its first lost tick and counts exactly what it lost")
    func parkedDrop() throws {
        let bus = try InProcessBus()
        let observers = try (0..<3).map { _ in try bus.connect() }
        let poster = try bus.connect()
        for observer in observers { try observer.send(Self.observe(["mail.**", "mail.inbox"], policy: "drop")) }
        bus.endTick()
        for observer in observers { _ = try observer.messages() }
        let fanOut = bus.bus.fanOut
        #expect(fanOut.observeIndex.count == 6)

        for observer in observers.prefix(2) { try observer.send(Self.suspend) }
        try poster.send(Self.post("mail.inbox"))
        bus.endTick()
        // Both lost the tick's post and left the selection, in one group.
        #expect(fanOut.parked.count == 2 && fanOut.parked.groupCount == 1)
        #expect(fanOut.observeIndex.count == 2)

        // A burst: the parked ones are counted per group; the live one gets every post.
        for _ in 0..<50 { try poster.send([Self.post("mail.inbox"), Self.post("mail.sent"), Self.post("news")]) }
        bus.endTick()
        #expect(try Self.names(observers[2]).count == 101)
        for index in 0..<2 {
            let subscription = try Self.subscription(bus, index)
            // "mail.inbox" matches both patterns and counts once.
            #expect(fanOut.dropped(of: subscription) == 101)
            #expect(try observers[index].messages().isEmpty)
        }

        // Resume: back in the selection, the count kept, later posts delivered.
        try observers[0].send(Self.resume)
        bus.endTick()
        #expect(fanOut.parked.count == 1 && fanOut.observeIndex.count == 4)
        try poster.send(Self.post("mail.new"))
        bus.endTick()
        #expect(try Self.names(observers[0]) == ["mail.new"])
        #expect(try observers[1].messages().isEmpty)
        #expect(fanOut.dropped(of: try Self.subscription(bus, 0)) == 101)
        #expect(fanOut.dropped(of: try Self.subscription(bus, 1)) == 102)

        // A parked subscription that ends leaves its group, and the group goes with its last member.
        try observers[1].channel.close().wait()
        bus.endTick()
        #expect(fanOut.parked.count == 0 && fanOut.parked.groupCount == 0)
        #expect(fanOut.observeIndex.count == 4)
    }

    @Test("a deliverImmediately post reaches parked observers, the object filter still applies, and nothing else")
    func parkedImmediate() throws {
        let bus = try InProcessBus()
        let all = try bus.connect()
        let door = try bus.connect()
        let poster = try bus.connect()
        try all.send(Self.observe(["home.**"], policy: "drop"))
        try door.send(Self.observe(["home.**"], policy: "drop", object: "door"))
        bus.endTick()
        _ = try all.messages()
        _ = try door.messages()
        try all.send(Self.suspend)
        try door.send(Self.suspend)
        try poster.send([Self.post("home.bell", object: "door"), Self.post("home.bell", object: "window")])
        bus.endTick()
        #expect(bus.bus.fanOut.parked.count == 2 && bus.bus.fanOut.parked.groupCount == 2)

        try poster.send([
            Self.post("home.alarm", object: "window", immediately: true), Self.post("home.bell", object: "door"),
            Self.post("home.alarm", object: "door", immediately: true),
        ])
        bus.endTick()
        #expect(try all.messages().count == 1)
        let doorMessages = try door.messages()
        #expect(doorMessages.count == 1)
        let objects = doorMessages.first?.parameters?["notifications"]?.arrayValue?.compactMap {
            $0["object"]?.stringValue
        }
        #expect(objects == ["door"])
        #expect(bus.bus.fanOut.dropped(of: try Self.subscription(bus, 0)) == 3)
        #expect(bus.bus.fanOut.dropped(of: try Self.subscription(bus, 1)) == 2)
    }

    @Test("a suspended drop watcher is parked too, a hold watcher keeps every change and sends them on Resume")
    func parkedWatch() throws {
        let bus = try InProcessBus()
        let holder = try bus.connect()
        let dropper = try bus.connect()
        let writer = try bus.connect()
        try holder.send(Call.watch(["app.**"]))
        try dropper.send([
            "method": "io.beacon.Properties.Watch", "more": true,
            "parameters": ["patterns": ["app.**"], "whileSuspended": "drop"],
        ])
        bus.endTick()
        _ = try holder.messages()
        _ = try dropper.messages()
        let held = try Self.subscription(bus, 0)
        let dropped = try Self.subscription(bus, 1)
        #expect(held.policy == .hold && dropped.policy == .drop)
        try holder.send(Self.suspend)
        try dropper.send(Self.suspend)
        for index in 0..<5 { try writer.send(Call.set("app.k\(index % 2)", .int(Int64(index)))) }
        bus.endTick()
        #expect(bus.bus.fanOut.parked.count == 1 && bus.bus.fanOut.parked.isParked(dropped))
        #expect(held.outbox.count == 5 && bus.bus.fanOut.dropped(of: dropped) == 5)
        for index in 5..<8 { try writer.send(Call.set("app.k\(index % 2)", .int(Int64(index)))) }
        bus.endTick()
        #expect(bus.bus.fanOut.dropped(of: dropped) == 8)

        try holder.send(Self.resume)
        try dropper.send(Self.resume)
        bus.endTick()
        let changes = try holder.items("changes")
        #expect(changes.compactMap { $0["value"]?.intValue } == Array(0..<8))
        #expect(held.outbox.isEmpty && bus.bus.fanOut.parked.count == 0)
        #expect(try dropper.messages().isEmpty)
        try writer.send(Call.set("app.k9", 9))
        bus.endTick()
        #expect(try dropper.messages().count == 1)
    }
}
