import Foundation

/// The real `beacond`, on a private socket and store in a temporary directory; stopped when released.
final class TestDaemon {
    let directory: String
    let socketPath: String
    private let process: Process

    /// Starts the daemon and waits for its `READY=1`.
    init() throws {
        directory = try makeTemporaryDirectory()
        socketPath = directory + "/run/beacon.sock"
        let notify = try NotifySocket(path: directory + "/notify.sock")
        process = Process()
        process.executableURL = URL(fileURLWithPath: try BuiltProducts.beacond())
        var environment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("BEACON_") && !$0.key.hasPrefix("LISTEN_") && !$0.key.hasPrefix("WATCHDOG_")
                && $0.key != "NOTIFY_SOCKET" && $0.key != "JOURNAL_STREAM"
        }
        environment["XDG_RUNTIME_DIR"] = directory + "/run"
        environment["XDG_STATE_HOME"] = directory + "/state"
        environment["XDG_CONFIG_HOME"] = directory + "/config"
        environment["HOME"] = directory
        environment["NOTIFY_SOCKET"] = notify.path
        process.environment = environment
        let logPath = directory + "/beacond.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let process = self.process
        try notify.wait(for: "READY=1", alive: { process.isRunning })
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `unix:PATH` of the daemon's socket.
    var address: String { "unix:" + socketPath }

    /// Kills the daemon and waits for it to end.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
