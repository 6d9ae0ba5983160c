import BeaconClient
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A new private directory under the temporary directory.
func makeTemporaryDirectory(_ prefix: String = "beacon-client-test") throws -> String {
    var bytes = Array((NSTemporaryDirectory() + prefix + "-XXXXXX").utf8CString)
    guard let made = mkdtemp(&bytes) else { throw TestFailure("mkdtemp failed") }
    return String(cString: made)
}

/// The real `beacond`, on a private socket and store in a temporary directory, started and restarted by the test.
final class Daemon: @unchecked Sendable {
    // Unchecked: used by one test at a time; `process` is only replaced by start() and kill() from that test.
    let directory: String
    let socketPath: String
    private let arguments: [String]
    private(set) var process: Process?
    private var notify: NotifySocket?

    var address: BeaconAddress { BeaconAddress(socketPath: socketPath) }
    var logPath: String { directory + "/beacond.log" }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts the daemon and waits for its READY=1.
    init(arguments: [String] = []) throws {
        directory = try makeTemporaryDirectory()
        socketPath = directory + "/run/beacon.sock"
        self.arguments = arguments
        try start()
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `$BEACOND_PATH`, else `beacond` built next to the test bundle.
    static func executable() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["BEACOND_PATH"] { return explicit }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        var candidates: [String] = []
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("beacond").path)
            directory = directory.deletingLastPathComponent()
        }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw TestFailure("beacond is not built next to the tests (looked at \(candidates)); set BEACOND_PATH")
    }

    /// Starts (or restarts) the daemon on the same socket and store.
    func start() throws {
        notify = nil
        let notify = try NotifySocket(path: directory + "/notify.sock")
        self.notify = notify
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.executable())
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("BEACON_") && !$0.key.hasPrefix("LISTEN_") && $0.key != "NOTIFY_SOCKET"
                && !$0.key.hasPrefix("WATCHDOG_") && $0.key != "JOURNAL_STREAM"
        }
        environment["XDG_RUNTIME_DIR"] = directory + "/run"
        environment["XDG_STATE_HOME"] = directory + "/state"
        environment["XDG_CONFIG_HOME"] = directory + "/config"
        environment["HOME"] = directory
        environment["NOTIFY_SOCKET"] = notify.path
        // No system bus: the lifecycle bridge stays off and the daemon says so.
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + directory + "/no-system-bus"
        process.environment = environment
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        try process.run()
        self.process = process
        try notify.wait(for: "READY=1", alive: { process.isRunning })
    }

    /// SIGKILL, and wait for the process to end.
    func kill() {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
