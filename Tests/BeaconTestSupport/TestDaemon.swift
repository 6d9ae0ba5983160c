import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The real `beacond`, on a private socket, store and configuration in a temporary directory. Started by `init`,
/// restarted in the same directories by ``start()``; killed and its directory removed when released.
///
/// Unchecked `Sendable`: a daemon belongs to one test, which alone starts and stops it.
public final class TestDaemon: @unchecked Sendable {
    /// The private directory: `HOME`, with `run`, `state` and `config` below it for the XDG directories.
    public let directory: String
    public let socketPath: String
    public let arguments: [String]
    /// Variables set on top of the test environment; they win over the ones this class sets.
    public let environment: [String: String]
    public private(set) var process: ChildProcess?
    /// The daemon's `NOTIFY_SOCKET`, new at each start.
    public private(set) var notify: NotifySocket?

    /// Starts the daemon with `arguments` and `environment` and waits for its `READY=1`. `directory`: an existing
    /// directory to use instead of a new one (it is removed when the daemon is released).
    public init(arguments: [String] = [], environment: [String: String] = [:], directory: String? = nil) throws {
        self.directory = try directory ?? makeTemporaryDirectory("beacond-test")
        socketPath = self.directory + "/run/beacon.sock"
        self.arguments = arguments
        self.environment = environment
        try start()
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `unix:PATH` of the daemon's socket.
    public var address: String { "unix:" + socketPath }
    public var pid: Int32 { process?.pid ?? 0 }
    public var isRunning: Bool { process?.isRunning ?? false }
    /// Standard output and error of every start, one after the other.
    public var logPath: String { directory + "/beacond.log" }
    /// The daemon's log so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts (or restarts) the daemon on the same socket and store, and waits for its `READY=1`.
    public func start() throws {
        notify = nil
        let notify = try NotifySocket(path: directory + "/notify.sock")
        self.notify = notify
        var variables = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("BEACON_") && !$0.key.hasPrefix("LISTEN_") && !$0.key.hasPrefix("WATCHDOG_")
                && $0.key != "NOTIFY_SOCKET" && $0.key != "JOURNAL_STREAM"
        }
        variables["XDG_RUNTIME_DIR"] = directory + "/run"
        variables["XDG_STATE_HOME"] = directory + "/state"
        variables["XDG_CONFIG_HOME"] = directory + "/config"
        variables["HOME"] = directory
        // Nothing installed on the machine (a bridge file in /usr/share/beacon, schemas) reaches a test's daemon.
        variables["XDG_DATA_DIRS"] = directory + "/data"
        variables["NOTIFY_SOCKET"] = notify.path
        variables["BEACON_LOG_LEVEL"] = "debug"
        // No system bus: the lifecycle bridge stays off and the daemon says so.
        variables["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + directory + "/no-system-bus"
        for (key, value) in environment { variables[key] = value }
        // A group of its own: no SIGHUP meant for the test runner's group (an orphaned group with a stopped member)
        // reaches it as a reload.
        let process = try ChildProcess(
            try BuiltProducts.beacond(), arguments, environment: variables, output: .file(logPath),
            error: .file(logPath), ownProcessGroup: true)
        self.process = process
        try notify.wait(for: "READY=1", alive: { process.isRunning })
    }

    /// SIGKILL, then waits for the process to end.
    public func kill() {
        guard let process, process.isRunning else { return }
        process.signal(SIGKILL)
        process.wait()
    }

    /// SIGTERM, then waits for the process to end; returns its exit status (-1 when it never started).
    @discardableResult
    public func terminate() -> Int32 {
        guard let process else { return -1 }
        process.signal(SIGTERM)
        return process.wait()
    }

    /// Sends the signal `number` to the running daemon.
    public func signal(_ number: Int32) {
        guard let process, process.isRunning else { return }
        process.signal(number)
    }
}
