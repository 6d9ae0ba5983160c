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
    private var daemon: Process?
    private var mocks: [String: Process] = [:]

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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = [
            "--config-file=\(directory.appendingPathComponent("bus.conf").path)", "--nofork", "--print-address",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        daemon = process
        // The daemon prints its address once it listens; end of file means it exited.
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw FixtureError("dbus-daemon exited before printing its address") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        address = String(text.prefix { $0 != "\n" })
    }

    /// Starts `/usr/bin/python3 -m dbusmock ARGUMENTS` on this bus as its system bus, and waits until it owns
    /// `name`.
    public func startMock(name: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "dbusmock"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        mocks[name] = process
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        process.arguments = ["--address=\(address)", "--"] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError(
                "busctl \(arguments.joined(separator: " ")): \(String(decoding: errorData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Children inherit the test runner's blocked signal mask (SIGTERM included), so they are killed with SIGKILL.
    private static func kill(_ process: Process) {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
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
