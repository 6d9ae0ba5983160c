import BeaconSystemd
import Foundation
import Logging

/// Drives python-dbusmock's logind template on a ``PrivateBus`` through its `org.freedesktop.DBus.Mock`
/// interface, with busctl.
struct LogindMock {
    static let service = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let mockInterface = "org.freedesktop.DBus.Mock"
    let bus: PrivateBus

    static func sessionPath(_ id: String) -> String { "/org/freedesktop/login1/session/\(id)" }

    /// Starts the template, replaces its `GetUser` (which cannot build its object path) and adds
    /// `InhibitDelayMaxUSec`, which the template lacks.
    static func start(on bus: PrivateBus, inhibitDelayMax: UInt64 = 5_000_000) throws -> LogindMock {
        try bus.startLogind()
        let mock = LogindMock(bus: bus)
        try mock.addManagerMethod(
            "GetUser", in: "u", out: "o", code: "ret = '/org/freedesktop/login1/user/%d' % args[0]")
        try mock.mock(
            "AddProperty", "ssv", "org.freedesktop.login1.Manager", "InhibitDelayMaxUSec", "t", "\(inhibitDelayMax)")
        return mock
    }

    func mock(_ method: String, _ arguments: String..., path: String = LogindMock.managerPath) throws {
        try bus.busctl(["call", Self.service, path, Self.mockInterface, method] + arguments)
    }

    func addManagerMethod(_ name: String, in inSignature: String, out outSignature: String, code: String) throws {
        try mock("AddMethod", "sssss", "org.freedesktop.login1.Manager", name, inSignature, outSignature, code)
    }

    @discardableResult
    func addSession(_ id: String, uid: UInt32 = 1000, active: Bool = true) throws -> String {
        try mock("AddSession", "ssusb", id, "seat0", "\(uid)", "user", active ? "true" : "false")
        return Self.sessionPath(id)
    }

    /// Points the user's `Display` property at a session (`nil`: no display session).
    func setDisplay(uid: UInt32 = 1000, session id: String?) throws {
        try bus.busctl(
            "set-property", Self.service, "/org/freedesktop/login1/user/\(uid)", "org.freedesktop.login1.User",
            "Display", "(so)", id ?? "", id.map(Self.sessionPath) ?? "/")
    }

    func setManagerFlag(_ name: String, _ value: Bool) throws {
        try bus.busctl(
            "set-property", Self.service, Self.managerPath, "org.freedesktop.login1.Manager", name, "b",
            value ? "true" : "false")
    }

    func setSessionFlag(_ id: String, _ name: String, _ value: Bool) throws {
        try mock(
            "UpdateProperties", "sa{sv}", "org.freedesktop.login1.Session", "1", name, "b", value ? "true" : "false",
            path: Self.sessionPath(id))
    }

    /// Calls the session's `Lock` or `Unlock`, which makes the template emit the signal of that name.
    func callSession(_ id: String, _ method: String) throws {
        try bus.busctl("call", Self.service, Self.sessionPath(id), "org.freedesktop.login1.Session", method)
    }

    func emitManagerSignal(_ member: String, _ flag: Bool) throws {
        try mock(
            "EmitSignal", "sssav", "org.freedesktop.login1.Manager", member, "b", "1", "b", flag ? "true" : "false")
    }

    /// Removes the session object, then announces it, as logind does.
    func removeSession(_ id: String) throws {
        try mock("RemoveObject", "o", Self.sessionPath(id))
        try mock(
            "EmitSignal", "sssav", "org.freedesktop.login1.Manager", "SessionRemoved", "so", "2", "s", id, "o",
            Self.sessionPath(id))
    }

    func emitSessionNew(_ id: String) throws {
        try mock(
            "EmitSignal", "sssav", "org.freedesktop.login1.Manager", "SessionNew", "so", "2", "s", id, "o",
            Self.sessionPath(id))
    }

    /// Inhibitors the mock holds open right now (it drops one when its file descriptor is closed).
    func openInhibitors() throws -> Int {
        let reply = try bus.busctl(
            "call", Self.service, Self.managerPath, "org.freedesktop.login1.Manager", "ListInhibitors")
        let fields = reply.split(separator: " ")
        guard fields.count >= 2, let count = Int(fields[1]) else { throw FixtureError("ListInhibitors: \(reply)") }
        return count
    }

    /// How often `Inhibit` was called, from the mock's call log.
    func inhibitCalls() throws -> Int {
        let reply = try bus.busctl("call", Self.service, Self.managerPath, Self.mockInterface, "GetCalls")
        return reply.components(separatedBy: "\"Inhibit\"").count - 1
    }

    func waitForOpenInhibitors(_ count: Int) throws {
        try waitUntil("the mock holds \(count) inhibitor(s)", within: .seconds(10)) {
            try openInhibitors() == count
        }
    }
}

extension Logger {
    static let test: Logger = {
        var logger = Logger(label: "beacon.test.logind")
        logger.logLevel = ProcessInfo.processInfo.environment["BEACON_TEST_LOG"] == nil ? .critical : .trace
        return logger
    }()
}

extension LogindBridgeConfiguration {
    static func test(bus: PrivateBus, sessionID: String? = "c1", sleepDelay: Duration = .seconds(30))
        -> LogindBridgeConfiguration
    {
        LogindBridgeConfiguration(
            bus: .address(bus.plannedAddress), sessionID: sessionID, userID: 1000, processID: getpid(),
            inhibitorWho: "beacon-test", sleepDelay: sleepDelay,
            reconnect: DBusReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(400)))
    }
}

/// Shorthands for expected events.
extension LogindEvent {
    static func flag(_ property: LifecycleProperty, _ value: Bool) -> LogindEvent { .property(property, .bool(value)) }
    static func state(_ active: Bool) -> LogindEvent {
        .property(.lifecycleState, .string(active ? "active" : "inactive"))
    }
    static func note(_ notification: LifecycleNotification) -> LogindEvent { .notification(notification) }

    static func initial(session: String, _ snapshot: LifecycleSnapshot) -> [LogindEvent] {
        [.bridgeState(.connected(sessionPath: LogindMock.sessionPath(session)))]
            + LifecycleProperty.allCases.map { .property($0, snapshot.value(of: $0)) }
    }
}
