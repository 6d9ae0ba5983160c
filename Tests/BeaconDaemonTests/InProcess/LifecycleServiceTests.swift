import BeaconProtocol
import BeaconSystemd
import NIOCore
import Testing

@testable import BeaconDaemon

/// ``LifecycleService`` in process, on the bus it reaches through ``LifecycleHost``: logind's events become
/// properties, notifications and the session's activity; the declarative bridge's values go through their
/// transforms, and a quiet property returns to its quiet value on the loop's timer.
@Suite("LifecycleService")
struct LifecycleServiceTests {
    static func value(_ bus: InProcessBus, _ client: InProcessBus.Client, _ key: String) throws -> JSONValue? {
        try client.send(Call.get(key))
        bus.endTick()
        return try client.messages().last?.parameters?["property"]?["value"]
    }

    @Test("logind's properties and notifications reach the bus; the lifecycle state suspends session followers")
    func logind() throws {
        let bus = try InProcessBus()
        let reader = try bus.connect()
        let observer = try bus.connect()
        try observer.send(Call.observe(["lifecycle.**"]))
        bus.endTick()
        _ = try observer.messages()
        let lifecycle = bus.bus.lifecycle
        lifecycle.attach(nil, sleepTimeout: .seconds(5))
        #expect(!lifecycle.enabled && lifecycle.summary == "disabled")

        lifecycle.apply(.property(.sessionLocked, .bool(true)))
        lifecycle.apply(.property(.lifecycleState, .string("inactive")))
        lifecycle.apply(.notification(.willResignActive(reason: .locked)))
        bus.endTick()
        #expect(try Self.value(bus, reader, "session.locked") == true)
        #expect(try Self.value(bus, reader, "lifecycle.state") == "inactive")
        #expect(lifecycle.snapshot?.sessionLocked == true)
        #expect(!bus.bus.fanOut.session.active)
        let names = try observer.items("notifications")
            .compactMap { $0["name"]?.stringValue }
        #expect(names == ["lifecycle.willResignActive"])

        lifecycle.apply(.property(.lifecycleState, .string("active")))
        bus.endTick()
        #expect(bus.bus.fanOut.session.active)
        #expect(lifecycle.stateReply["sessionLocked"] == true)
    }

    @Test("a bridged property goes through its map and returns to its quiet value when no signal comes")
    func bridgedQuietProperty() throws {
        let bus = try InProcessBus()
        let reader = try bus.connect()
        let lifecycle = bus.bus.lifecycle
        lifecycle.bridgeTransforms[.property("desktop.alert")] = BridgeTransform(
            map: ["1": "raised"], otherwise: "calm", quietMs: 200, quietValue: "calm")
        lifecycle.apply(.property(key: "desktop.alert", value: .int64(1)))
        bus.endTick()
        #expect(try Self.value(bus, reader, "desktop.alert") == "raised")
        #expect(lifecycle.bridgeQuietTimers["desktop.alert"] != nil)
        bus.loop.advanceTime(by: .milliseconds(199))
        #expect(try Self.value(bus, reader, "desktop.alert") == "raised")
        bus.loop.advanceTime(by: .milliseconds(1))
        bus.endTick()
        #expect(try Self.value(bus, reader, "desktop.alert") == "calm")
        #expect(lifecycle.bridgeQuietTimers["desktop.alert"] == nil)
    }

    @Test("a bridged notification names its arguments as the transform says")
    func bridgedNotification() throws {
        let bus = try InProcessBus()
        let observer = try bus.connect()
        try observer.send(Call.observe(["desktop.**"]))
        bus.endTick()
        _ = try observer.messages()
        let lifecycle = bus.bus.lifecycle
        lifecycle.bridgeTransforms[.notification("desktop.battery")] = BridgeTransform(names: ["level", "state"])
        lifecycle.apply(.notification(name: "desktop.battery", arguments: [.int64(40), .string("discharging")]))
        lifecycle.apply(.notification(name: "desktop.other", arguments: [.bool(true)]))
        bus.endTick()
        let notes = try observer.items("notifications")
        #expect(notes.count == 2)
        #expect(notes.first?["userInfo"] == ["level": 40, "state": "discharging"])
        #expect(notes.last?["userInfo"] == ["arguments": [true], "value": true])
    }
}
