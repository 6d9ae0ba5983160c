import BeaconProtocol
import NIOCore
import Testing

@testable import BeaconDaemon

/// `io.beacon.Properties` on the bus in process: the service's own rules, one tick at a time.
@Suite("PropertiesService in process")
struct PropertiesServiceTests {
    /// The changes of every stream reply `client` received since the last read.
    static func changes(_ client: InProcessBus.Client) throws -> [JSONValue] {
        try client.items("changes")
    }

    @Test(
        "ifVersion decides a Set and an Unset; a Set of the value held is answered unchanged, stored and told of nowhere"
    )
    func conditionalWrites() throws {
        let bus = try InProcessBus()
        let writer = try bus.connect()
        let watcher = try bus.connect()
        try watcher.send(Call.watch(["app.**"]))
        bus.endTick()
        _ = try watcher.messages()

        try writer.send(Call.set("app.mode", "dark"))
        bus.endTick()
        #expect(try writer.messages().first?.parameters?["version"] == 1)
        let commits = bus.storage.transactions.count

        try writer.send([
            Call.method("io.beacon.Properties.Set", ["key": "app.mode", "value": "light", "ifVersion": 7]),
            Call.set("app.mode", "dark"),
            Call.method("io.beacon.Properties.Unset", ["key": "app.mode", "ifVersion": 0]),
        ])
        bus.endTick()
        let replies = try writer.messages()
        #expect(replies[0].errorName == "io.beacon.Properties.VersionMismatch")
        #expect(replies[0].parameters?["actual"] == 1 && replies[0].parameters?["expected"] == 7)
        #expect(replies[1].parameters?["unchanged"] == true && replies[1].parameters?["version"] == 1)
        #expect(replies[2].errorName == "io.beacon.Properties.VersionMismatch")
        #expect(bus.storage.transactions.count == commits, "a tick that changed nothing commits nothing")
        #expect(try Self.changes(watcher).map { $0["value"] } == ["dark"])

        try writer.send(Call.method("io.beacon.Properties.Unset", ["key": "app.mode", "ifVersion": 1]))
        bus.endTick()
        #expect(try writer.messages().first?.parameters?["version"] == 2)
        let deleted = try Self.changes(watcher)
        #expect(deleted.map { $0["deleted"] } == [true] && deleted.first?["version"] == 2)
        #expect(bus.storage.properties["app.mode"] == nil)
    }

    @Test("the daemon's own keys are read-only, and a value over maxValueSize is refused before it is stored")
    func refusedWrites() throws {
        var limits = DaemonLimits()
        limits.maxValueSize = 16
        let bus = try InProcessBus(limits: limits)
        let client = try bus.connect()
        let commits = bus.storage.transactions.count
        try client.send([
            Call.set("session.active", true),
            Call.set("app.big", .string(String(repeating: "x", count: 32))),
            Call.set("app..bad", 1),
            Call.get("app.big"),
        ])
        bus.endTick()
        let replies = try client.messages()
        #expect(
            replies.map(\.errorName) == [
                "io.beacon.Properties.ReadOnly", "io.beacon.Properties.ValueTooLarge",
                "io.beacon.Properties.InvalidKey",
                "io.beacon.Properties.KeyNotFound",
            ])
        #expect(bus.storage.transactions.count == commits)
    }

    @Test("Watch with since replays the changes after it; an ephemeral value goes with its connection")
    func replayAndEphemeral() throws {
        let bus = try InProcessBus()
        let writer = try bus.connect()
        try writer.send([Call.set("app.a", 1), Call.set("app.b", 2), Call.set("other.c", 3), Call.set("app.a", 4)])
        bus.endTick()
        _ = try writer.messages()

        let watcher = try bus.connect()
        try watcher.send(Call.method("io.beacon.Properties.Watch", ["patterns": ["app.**"], "since": 1], more: true))
        bus.endTick()
        let first = try watcher.messages()
        let replayed = first.first?.parameters?["changes"]?.arrayValue ?? []
        #expect(replayed.map { $0["key"] } == ["app.b", "app.a"], "\(first)")
        #expect(replayed.map { $0["version"] } == [2, 4])
        #expect(first.first?.parameters?["resync"] != true)

        let owner = try bus.connect()
        try owner.send(Call.method("io.beacon.Properties.Set", ["key": "app.here", "value": 1, "ephemeral": true]))
        bus.endTick()
        #expect(try owner.messages().first?.parameters?["version"] == 5)
        #expect(try Self.changes(watcher).map { $0["key"] } == ["app.here"])
        try owner.channel.close().wait()
        bus.endTick()
        let gone = try Self.changes(watcher)
        #expect(gone.map { $0["key"] } == ["app.here"] && gone.first?["deleted"] == true)
        #expect(gone.first?["version"] == 6)
        #expect(bus.storage.properties["app.here"] == nil && !bus.storage.ephemeral.contains("app.here"))
    }

    @Test(
        "a registered schema shows its default at version 0, refuses a value of another type, and goes with its connection"
    )
    func throughSettings() throws {
        let bus = try InProcessBus()
        let watcher = try bus.connect()
        try watcher.send(Call.watch(["app.**"]))
        bus.endTick()
        _ = try watcher.messages()

        let registrant = try bus.connect()
        try registrant.send(
            Call.method(
                "io.beacon.Settings.Register",
                ["schema": ["keys": ["app.volume": ["type": "integer", "default": 5]]]]))
        bus.endTick()
        #expect(try registrant.messages().first?.parameters?["keys"] == 1)
        let appeared = try Self.changes(watcher)
        #expect(appeared.map { $0["value"] } == [5] && appeared.first?["default"] == true)

        let client = try bus.connect()
        try client.send([Call.get("app.volume"), Call.set("app.volume", "loud"), Call.set("app.volume", 7)])
        bus.endTick()
        let replies = try client.messages()
        #expect(replies[0].parameters?["property"]?["value"] == 5)
        #expect(replies[0].parameters?["property"]?["version"] == 0)
        #expect(replies[0].parameters?["property"]?["default"] == true)
        #expect(replies[1].errorName == "io.beacon.Properties.TypeMismatch")
        #expect(replies[2].parameters?["version"] != nil)
        #expect(try Self.changes(watcher).map { $0["value"] } == [7])

        // The stored value outlives the schema; only the default went with it.
        try registrant.channel.close().wait()
        try client.send(Call.get("app.volume"))
        bus.endTick()
        let after = try client.messages().first?.parameters?["property"]
        #expect(after?["value"] == 7 && after?["default"] == nil)
    }
}
