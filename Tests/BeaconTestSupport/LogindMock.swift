import Foundation

/// Drives python-dbusmock's logind template on a ``PrivateBus`` through its `org.freedesktop.DBus.Mock`
/// interface, with busctl.
public struct LogindMock {
    public static let service = "org.freedesktop.login1"
    public static let managerPath = "/org/freedesktop/login1"
    public static let mockInterface = "org.freedesktop.DBus.Mock"
    public let bus: PrivateBus

    public static func sessionPath(_ id: String) -> String { "/org/freedesktop/login1/session/\(id)" }

    /// Starts the template, replaces its `GetUser` (which cannot build its object path) and adds
    /// `InhibitDelayMaxUSec`, which the template lacks.
    public static func start(on bus: PrivateBus, inhibitDelayMax: UInt64 = 5_000_000) throws -> LogindMock {
        try bus.startLogind()
        let mock = LogindMock(bus: bus)
        try mock.addManagerMethod(
            "GetUser", in: "u", out: "o", code: "ret = '/org/freedesktop/login1/user/%d' % args[0]")
        try mock.mock(
            "AddProperty", "ssv", "org.freedesktop.login1.Manager", "InhibitDelayMaxUSec", "t", "\(inhibitDelayMax)")
        return mock
    }

    public func mock(_ method: String, _ arguments: String..., path: String = LogindMock.managerPath) throws {
        try bus.busctl(["call", Self.service, path, Self.mockInterface, method] + arguments)
    }

    public func addManagerMethod(_ name: String, in inSignature: String, out outSignature: String, code: String) throws
    {
        try mock("AddMethod", "sssss", "org.freedesktop.login1.Manager", name, inSignature, outSignature, code)
    }

    @discardableResult
    public func addSession(_ id: String, uid: UInt32 = 1000, active: Bool = true) throws -> String {
        try mock("AddSession", "ssusb", id, "seat0", "\(uid)", "user", active ? "true" : "false")
        return Self.sessionPath(id)
    }

    /// Points the user's `Display` property at a session (`nil`: no display session).
    public func setDisplay(uid: UInt32 = 1000, session id: String?) throws {
        try bus.busctl(
            "set-property", Self.service, "/org/freedesktop/login1/user/\(uid)", "org.freedesktop.login1.User",
            "Display", "(so)", id ?? "", id.map(Self.sessionPath) ?? "/")
    }

    public func setManagerFlag(_ name: String, _ value: Bool) throws {
        try bus.busctl(
            "set-property", Self.service, Self.managerPath, "org.freedesktop.login1.Manager", name, "b",
            value ? "true" : "false")
    }

    public func setSessionFlag(_ id: String, _ name: String, _ value: Bool) throws {
        try mock(
            "UpdateProperties", "sa{sv}", "org.freedesktop.login1.Session", "1", name, "b", value ? "true" : "false",
            path: Self.sessionPath(id))
    }

    /// Calls the session's `Lock` or `Unlock`, which makes the template emit the signal of that name.
    public func callSession(_ id: String, _ method: String) throws {
        try bus.busctl("call", Self.service, Self.sessionPath(id), "org.freedesktop.login1.Session", method)
    }

    public func emitManagerSignal(_ member: String, _ flag: Bool) throws {
        try mock(
            "EmitSignal", "sssav", "org.freedesktop.login1.Manager", member, "b", "1", "b", flag ? "true" : "false")
    }

    /// Removes the session object, then announces it, as logind does.
    public func removeSession(_ id: String) throws {
        try mock("RemoveObject", "o", Self.sessionPath(id))
        try mock(
            "EmitSignal", "sssav", "org.freedesktop.login1.Manager", "SessionRemoved", "so", "2", "s", id, "o",
            Self.sessionPath(id))
    }

    public func emitSessionNew(_ id: String) throws {
        try mock(
            "EmitSignal", "sssav", "org.freedesktop.login1.Manager", "SessionNew", "so", "2", "s", id, "o",
            Self.sessionPath(id))
    }

    /// Inhibitors the mock holds open right now (it drops one when its file descriptor is closed).
    public func openInhibitors() throws -> Int {
        let reply = try bus.busctl(
            "call", Self.service, Self.managerPath, "org.freedesktop.login1.Manager", "ListInhibitors")
        let fields = reply.split(separator: " ")
        guard fields.count >= 2, let count = Int(fields[1]) else { throw FixtureError("ListInhibitors: \(reply)") }
        return count
    }

    /// How often `Inhibit` was called, from the mock's call log.
    public func inhibitCalls() throws -> Int {
        let reply = try bus.busctl("call", Self.service, Self.managerPath, Self.mockInterface, "GetCalls")
        return reply.components(separatedBy: "\"Inhibit\"").count - 1
    }

    public func waitForOpenInhibitors(_ count: Int) throws {
        try waitUntil("the mock holds \(count) inhibitor(s)", within: .seconds(10)) {
            try openInhibitors() == count
        }
    }
}
