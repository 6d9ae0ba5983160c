import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconSystemd

@Suite("DBusBridge: D-Bus properties and signals of another service as Beacon properties and notifications")
struct LogindDBusBridgeTests {
    static let service = "com.example.Net"
    static let path = "/com/example/Net"

    /// A python-dbusmock object standing in for a service such as NetworkManager.
    static func startService(on bus: PrivateBus) throws {
        try bus.startMock(name: service, arguments: ["--session", service, path, service])
        try mock(bus, "AddProperty", "ssv", service, "State", "u", "20")
        try mock(bus, "AddProperty", "ssv", service, "Percentage", "d", "50.5")
        try mock(bus, "AddProperty", "ssv", service, "Info", "a{sv}", "2", "ssid", "s", "home", "strength", "y", "80")
    }

    static func mock(_ bus: PrivateBus, _ method: String, _ arguments: String...) throws {
        try bus.busctl(["call", service, path, "org.freedesktop.DBus.Mock", method] + arguments)
    }

    static func mapping(_ bus: PrivateBus, _ source: DBusMapping.Source, _ target: DBusMapping.Target) -> DBusMapping {
        DBusMapping(
            bus: .address(bus.address), name: service, path: path, interface: service, source: source,
            target: target)
    }

    @Test("initial values, changes, signals, and the service leaving and coming back")
    func propertiesAndSignals() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        try Self.startService(on: bus)

        let bridge = try DBusBridge(
            mappings: [
                Self.mapping(bus, .property("State"), .property("net.state")),
                Self.mapping(bus, .property("Percentage"), .property("power.level")),
                Self.mapping(bus, .property("Info"), .property("net.info")),
                Self.mapping(bus, .property("Missing"), .property("net.missing")),
                Self.mapping(bus, .property("State"), .notification("net.stateChanged")),
                Self.mapping(bus, .signal("Changed"), .notification("net.changed")),
                Self.mapping(bus, .signal("Level"), .property("net.level")),
            ],
            reconnect: DBusReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(400)),
            logger: .test)
        defer { bridge.shutdown() }
        let recorder = EventRecorder(bridge.events)
        try bridge.start()

        var wanted: [DBusBridgeEvent] = [
            .busState(.address(bus.address), .connected),
            .property(key: "net.state", value: .uint64(20)),
            .property(key: "power.level", value: .double(50.5)),
            .property(key: "net.info", value: .dict(["ssid": .string("home"), "strength": .uint64(80)])),
            .property(key: "net.missing", value: nil),
        ]
        #expect(await recorder.next(wanted.count) == wanted)
        #expect(bridge.busStates == [.address(bus.address): .connected])

        try bus.busctl("set-property", Self.service, Self.path, Self.service, "State", "u", "70")
        wanted = [
            .property(key: "net.state", value: .uint64(70)),
            .notification(name: "net.stateChanged", arguments: [.uint64(70)]),
        ]
        #expect(await recorder.next(wanted.count) == wanted)

        // The same value again is no change; the signal that follows shows nothing came before it.
        try bus.busctl("set-property", Self.service, Self.path, Self.service, "State", "u", "70")
        try Self.mock(bus, "EmitSignal", "sssav", Self.service, "Changed", "si", "2", "s", "wifi", "i", "-3")
        let changed: DBusBridgeEvent = .notification(name: "net.changed", arguments: [.string("wifi"), .int64(-3)])
        #expect(await recorder.next(1) == [changed])
        try Self.mock(bus, "EmitSignal", "sssav", Self.service, "Level", "(so)", "1", "(so)", "a", "/x")
        let level: DBusBridgeEvent = .property(key: "net.level", value: .array([.string("a"), .objectPath("/x")]))
        #expect(await recorder.next(1) == [level])

        // The service leaves: its properties become unavailable; it comes back: they are read again.
        bus.stopMock(name: Self.service)
        wanted = [
            .property(key: "net.state", value: nil), .property(key: "power.level", value: nil),
            .property(key: "net.info", value: nil), .property(key: "net.level", value: nil),
        ]
        #expect(await recorder.next(wanted.count) == wanted)
        try bus.startMock(name: Self.service, arguments: ["--session", Self.service, Self.path, Self.service])
        try Self.mock(bus, "AddProperty", "ssv", Self.service, "State", "u", "30")
        try bus.busctl("set-property", Self.service, Self.path, Self.service, "State", "u", "40")
        // Depending on timing the first read sees the service before or after State exists; it ends at 40.
        let back = await recorder.collect(until: { $0 == .property(key: "net.state", value: .uint64(40)) })
        #expect(back.last == .property(key: "net.state", value: .uint64(40)))
        #expect(!back.contains(.property(key: "net.missing", value: nil)))
    }

    /// A bridge of `State` to `net.state` on `bus`, which is not started yet: started, and past its first report,
    /// that the bus is not there.
    static func bridgeBeforeTheBus(
        _ bus: PrivateBus, reconnect: DBusReconnectPolicy
    ) async throws -> (bridge: DBusBridge, recorder: EventRecorder<DBusBridgeEvent>, address: DBusBusAddress) {
        let address = DBusBusAddress.address(bus.plannedAddress)
        let bridge = try DBusBridge(
            mappings: [
                DBusMapping(
                    bus: address, name: Self.service, path: Self.path, interface: Self.service,
                    source: .property("State"), target: .property("net.state"))
            ],
            reconnect: reconnect, logger: .test)
        let recorder = EventRecorder(bridge.events)
        try bridge.start()
        let first = await recorder.next(1)
        guard case .busState(address, .disconnected)? = first.first else {
            bridge.shutdown()
            throw TestFailure("expected a disconnected state first, got \(first)")
        }
        return (bridge, recorder, address)
    }

    @Test("no bus at first: the bridge reports it, then connects by itself")
    func busAppearsLater() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        let (bridge, recorder, address) = try await Self.bridgeBeforeTheBus(
            bus, reconnect: DBusReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200)))
        defer { bridge.shutdown() }
        try bus.start()
        try Self.startService(on: bus)
        // The bridge may read State before the mock has it; the change below is seen either way.
        try bus.busctl("set-property", Self.service, Self.path, Self.service, "State", "u", "25")
        let later = await recorder.collect(until: { $0 == .property(key: "net.state", value: .uint64(25)) })
        #expect(later.contains(.busState(address, .connected)))
        #expect(later.last == .property(key: "net.state", value: .uint64(25)))
    }

    @Test("a bus whose socket does not exist is waited for, not retried: it is connected as soon as it appears")
    func socketAppearsWithoutRetries() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        // A first retry an hour away: only the socket's appearance can bring the connection in time.
        let (bridge, recorder, address) = try await Self.bridgeBeforeTheBus(
            bus, reconnect: DBusReconnectPolicy(initialDelay: .seconds(3600)))
        defer { bridge.shutdown() }
        try bus.start()
        let later = await recorder.next(1, within: .seconds(20))
        #expect(later == [.busState(address, .connected)])
    }

    @Test("the socket path of a bus address: the first unix path, escapes decoded")
    func socketPaths() {
        #expect(SDBusLoop.unixPath("unix:path=/run/user/1000/bus") == "/run/user/1000/bus")
        #expect(SDBusLoop.unixPath("unix:guid=1,path=/tmp/a%20b;tcp:host=x") == "/tmp/a b")
        #expect(SDBusLoop.unixPath("tcp:host=x;unix:path=/b") == "/b")
        #expect(SDBusLoop.unixPath("unix:abstract=/x") == nil)
    }

    static let badMappings: [DBusMapping] = [
        DBusMapping(
            bus: .session, name: "not a name", path: "/a", interface: "a.b", source: .property("P"),
            target: .property("x")),
        DBusMapping(
            bus: .session, name: "a.b", path: "no/slash", interface: "a.b", source: .property("P"),
            target: .property("x")),
        DBusMapping(
            bus: .session, name: "a.b", path: "/a", interface: "nodots", source: .property("P"),
            target: .property("x")),
        DBusMapping(
            bus: .session, name: "a.b", path: "/a", interface: "a.b", source: .signal("bad-member"),
            target: .property("x")),
        DBusMapping(
            bus: .session, name: "a.b", path: "/a", interface: "a.b", source: .signal("Good"),
            target: .notification("")),
    ]

    @Test("bad mappings are rejected with a named error", arguments: badMappings)
    func validation(mapping: DBusMapping) {
        #expect(throws: DBusConfigurationError.self) { try mapping.validate() }
        #expect(throws: DBusConfigurationError.self) { try DBusBridge(mappings: [mapping], logger: .test) }
    }
}
