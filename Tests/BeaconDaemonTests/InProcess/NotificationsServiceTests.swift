import BeaconProtocol
import NIOCore
import Testing

@testable import BeaconDaemon

/// `io.beacon.Notifications` on the bus in process.
@Suite("NotificationsService in process")
struct NotificationsServiceTests {
    static func notifications(_ client: InProcessBus.Client) throws -> [JSONValue] {
        try client.items("notifications")
    }

    @Test("posts are numbered in order and reach the observers whose patterns and object match")
    func numberedAndFiltered() throws {
        let bus = try InProcessBus()
        let all = try bus.connect()
        let ofDoc = try bus.connect()
        try all.send(Call.observe(["doc.*"]))
        try ofDoc.send(
            Call.method("io.beacon.Notifications.Observe", ["patterns": ["doc.saved"], "object": "a.txt"], more: true))
        bus.endTick()
        #expect(try all.messages().first?.parameters?["sequence"] == 0)
        _ = try ofDoc.messages()

        let poster = try bus.connect()
        try poster.send([
            Call.method("io.beacon.Notifications.Post", ["name": "doc.saved", "object": "a.txt"]),
            Call.method("io.beacon.Notifications.Post", ["name": "doc.saved", "object": "b.txt"]),
            Call.post("doc.closed", ["why": "done"]),
            Call.post("other.thing", 1),
        ])
        bus.endTick()
        #expect(try poster.messages().map { $0.parameters?["sequence"] } == [1, 2, 3, 4])
        let seen = try Self.notifications(all)
        #expect(seen.map { $0["name"] } == ["doc.saved", "doc.saved", "doc.closed"])
        #expect(seen.map { $0["sequence"] } == [1, 2, 3])
        #expect(seen.last?["userInfo"]?["why"] == "done")
        let filtered = try Self.notifications(ofDoc)
        #expect(filtered.map { $0["object"] } == ["a.txt"] && filtered.first?["sequence"] == 1)
    }

    @Test("a reserved name, a bad name and a userInfo over maxValueSize are refused and take no sequence number")
    func refusedPosts() throws {
        var limits = DaemonLimits()
        limits.maxValueSize = 16
        let bus = try InProcessBus(limits: limits)
        let observer = try bus.connect()
        try observer.send(Call.observe(["**"]))
        bus.endTick()
        _ = try observer.messages()

        let poster = try bus.connect()
        try poster.send([
            Call.post("lifecycle.didBecomeActive", 1),
            Call.post("bad..name", 1),
            Call.post("app.big", .string(String(repeating: "x", count: 32))),
            Call.post("app.ok", 1),
        ])
        bus.endTick()
        let replies = try poster.messages()
        #expect(
            replies.prefix(3).map(\.errorName) == [
                "io.beacon.Notifications.InvalidName", "io.beacon.Notifications.InvalidName", "io.beacon.LimitExceeded",
            ])
        #expect(replies.last?.parameters?["sequence"] == 1)
        let seen = try Self.notifications(observer)
        #expect(seen.map { $0["name"] } == ["app.ok"] && seen.first?["userInfo"] == 1)
    }

    @Test("an Observe over maxPatterns is refused; without more it is refused too")
    func refusedObserves() throws {
        var limits = DaemonLimits()
        limits.maxPatterns = 2
        let bus = try InProcessBus(limits: limits)
        let client = try bus.connect()
        try client.send(Call.observe(["a", "b", "c"]))
        bus.endTick()
        #expect(try client.messages().first?.errorName == "io.beacon.LimitExceeded")
        let other = try bus.connect()
        try other.send(Call.method("io.beacon.Notifications.Observe", ["patterns": ["a"]]))
        bus.endTick()
        #expect(try other.messages().first?.errorName == "org.varlink.service.ExpectedMore")
        #expect(bus.bus.fanOut.subscriptionCount == 0)
    }
}
