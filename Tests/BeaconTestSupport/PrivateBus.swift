import Foundation

/// A failure of the test fixtures themselves (a process that would not start, a call that failed).
public struct FixtureError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A private `dbus-daemon` on a Unix socket in a temporary directory, configured like a system bus that lets
/// everyone own names and talk to everyone, plus the processes started against it.
public final class PrivateBus: @unchecked Sendable {
    public let directory: URL
    public let socketPath: String
    public private(set) var address = ""
    private var daemon: ChildProcess?
    private var mocks: [String: ChildProcess] = [:]

    /// Creates the directory and the configuration; ``start()`` runs the daemon.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("beacon-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        socketPath = directory.appendingPathComponent("bus").path
        let configuration = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(socketPath)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_type="method_return"/>
                <allow send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="signal"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
              </policy>
            </busconfig>
            """
        try configuration.write(to: directory.appendingPathComponent("bus.conf"), atomically: true, encoding: .utf8)
    }

    /// The address clients use, known before the daemon runs.
    public var plannedAddress: String { "unix:path=\(socketPath)" }

    public func start() throws {
        let process = try ChildProcess(
            "/usr/bin/dbus-daemon",
            ["--config-file=\(directory.appendingPathComponent("bus.conf").path)", "--nofork", "--print-address"],
            output: .capture)
        daemon = process
        // The daemon prints its address once it listens; end of output means it exited.
        let printed = process.readOutput { $0.contains(UInt8(ascii: "\n")) }
        guard let newline = printed.firstIndex(of: UInt8(ascii: "\n")) else {
            throw FixtureError("dbus-daemon exited before printing its address")
        }
        address = String(decoding: printed[..<newline], as: UTF8.self)
    }

    /// Starts `/usr/bin/python3 -m dbusmock ARGUMENTS` on this bus as its system bus, and waits until it owns
    /// `name`.
    public func startMock(name: String, arguments: [String]) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        mocks[name] = try ChildProcess("/usr/bin/python3", ["-m", "dbusmock"] + arguments, environment: environment)
        try waitUntil("\(name) owns its name", within: .seconds(20)) {
            let reply = try? busctl(
                "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "NameHasOwner", "s", name)
            return reply == "b true"
        }
    }

    /// Starts python-dbusmock's logind template.
    public func startLogind() throws {
        try startMock(name: "org.freedesktop.login1", arguments: ["--system", "--template", "logind"])
    }

    public func stopMock(name: String) {
        guard let process = mocks.removeValue(forKey: name) else { return }
        Self.kill(process)
    }

    /// Runs `busctl --address=ADDRESS ARGUMENTS` and returns its trimmed output.
    @discardableResult
    public func busctl(_ arguments: String...) throws -> String {
        try busctl(arguments)
    }

    @discardableResult
    public func busctl(_ arguments: [String]) throws -> String {
        let process = try ChildProcess(
            "/usr/bin/busctl", ["--address=\(address)", "--"] + arguments, output: .capture, error: .capture)
        let (data, errorData) = process.readOutputAndError()
        guard process.wait() == 0 else {
            throw FixtureError(
                "busctl \(arguments.joined(separator: " ")): \(String(decoding: errorData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func kill(_ process: ChildProcess) {
        guard process.isRunning else { return }
        process.signal(SIGKILL)
        process.wait()
    }

    /// Stops every process and removes the directory.
    public func shutdown() {
        for name in Array(mocks.keys) { stopMock(name: name) }
        if let daemon {
            Self.kill(daemon)
            self.daemon = nil
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Checks `condition` until it holds or `limit` passes; for state that has no event to wait on (another
/// process's view, like logind's list of inhibitors).
public func waitUntil(_ what: String, within limit: Duration, _ condition: () throws -> Bool) throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: limit)
    while clock.now < deadline {
        if try condition() { return }
        usleep(10_000)
    }
    throw FixtureError("timed out waiting until \(what)")
}
