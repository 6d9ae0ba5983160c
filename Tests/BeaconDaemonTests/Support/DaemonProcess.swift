import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A new private directory under the temporary directory.
func makeTemporaryDirectory() throws -> String {
    let template = NSTemporaryDirectory() + "beacond-test-XXXXXX"
    var bytes = Array(template.utf8CString)
    guard let made = mkdtemp(&bytes) else { throw TestFailure("mkdtemp failed") }
    return String(cString: made)
}

/// Runs a program to its end; standard error goes through a file so that neither output can fill up.
func runProcess(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
    let directory = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let errorPath = directory + "/stderr"
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    return (process.terminationStatus, String(decoding: data, as: UTF8.self), errors)
}

/// The real `beacond` binary, started on a private socket and store in a temporary directory.
final class DaemonProcess {
    let directory: String
    let socketPath: String
    let arguments: [String]
    let environment: [String: String]
    private(set) var process: Process?
    private(set) var notify: NotifySocket?
    private var logIndex = 0

    /// Starts the daemon and waits for READY=1.
    init(
        arguments: [String] = [],
        environment: [String: String] = [:],
        directory: String? = nil
    ) throws {
        self.directory = try directory ?? makeTemporaryDirectory()
        socketPath = self.directory + "/run/beacon.sock"
        self.arguments = arguments
        self.environment = environment
        try start()
    }

    deinit {
        if let process, process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The `beacond` executable built next to the test bundle.
    static func executable() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["BEACOND_PATH"] { return explicit }
        var candidates: [String] = []
        let argument0 = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = argument0.deletingLastPathComponent()
        // From .build/debug/X.xctest (a file or a bundle directory) up to .build/debug.
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("beacond").path)
            directory = directory.deletingLastPathComponent()
        }
        candidates.append(
            URL(fileURLWithPath: Bundle.main.bundlePath).deletingLastPathComponent().appendingPathComponent("beacond")
                .path
        )
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw TestFailure(
            "beacond is not built next to the tests (looked at \(candidates)); run `swift build --build-tests` first"
        )
    }

    var pid: Int32 { process?.processIdentifier ?? 0 }
    var isRunning: Bool { process?.isRunning ?? false }
    var logPath: String { directory + "/beacond.log" }

    /// The daemon's log so far.
    var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    func start() throws {
        self.notify = nil
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
        environment["BEACON_LOG_LEVEL"] = "debug"
        for (key, value) in self.environment { environment[key] = value }
        process.environment = environment
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        try process.run()
        self.process = process
        try notify.wait(for: "READY=1", alive: { process.isRunning })
    }

    /// SIGKILL, then wait for the process to end.
    func kill() {
        guard let process else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM, then wait for the process to end; returns its exit status.
    @discardableResult
    func terminate() -> Int32 {
        guard let process else { return -1 }
        Glibc.kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends a signal.
    func signal(_ number: Int32) {
        guard let process else { return }
        Glibc.kill(process.processIdentifier, number)
    }

    /// A new client connection.
    func connect() throws -> VarlinkTestClient {
        try VarlinkTestClient(path: socketPath)
    }
}
