import BeaconDaemon
import BeaconProtocol
import BeaconSystemd
import CMalloc
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// Process-wide set-up belongs to the program, not to the library: malloc's tuning (one arena, fixed thresholds) and
// the signal mask before any thread starts, the executor of Swift concurrency, logging, the umask and the file limit.
beacon_malloc_configure()
// A daemon's standard error may be a pipe whose reader goes away (`beacond 2>&1 | head`): the write that finds it
// closed fails with EPIPE, and the log line is lost, rather than SIGPIPE ending the daemon and leaving its socket.
signal(SIGPIPE, SIG_IGN)
// SIGTERM, SIGINT and SIGHUP reach the daemon through signalfds on its event loop; blocked here, every thread
// started later inherits the mask.
blockDaemonSignals()
// Swift concurrency's jobs run on the daemon's event loop rather than libdispatch's worker pool, whose monitor wakes
// the process every second once the pool has been used. With it, an idle daemon wakes only for its own timers.
let executorInstalled = EventLoopExecutor.install()

let arguments = CommandLine.arguments
if arguments.contains("--help") || arguments.contains("-h") {
    print(BeaconDaemon.usage)
    exit(0)
}
if arguments.contains("--version") {
    print("beacond \(BeaconVersion.current)")
    exit(0)
}

/// The daemon's asynchronous part. It runs in a detached task on the daemon's event loop; the main thread only waits.
/// (Asynchronous top-level code would resume on the main actor, whose queue libdispatch drains with its own
/// worker threads and their once-a-second monitor.)
enum Program {
    static func run(arguments: [String], executorInstalled: Bool) async -> Int32 {
        let load: @Sendable () async throws -> DaemonConfiguration = {
            try await BeaconDaemon.loadConfiguration(arguments: arguments)
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try await load()
        } catch {
            let message = "beacond: \(error)\n"
            _ = message.withCString { write(2, $0, strlen($0)) }
            return 2
        }
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = SystemdLogging.makeHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "beacond")
        if !executorInstalled {
            logger.notice(
                "Swift concurrency runs on libdispatch's worker pool, which wakes an idle daemon every second")
        }
        // Files and sockets the daemon creates are private to its user.
        umask(0o077)
        raiseFileLimit(logger: logger)
        return await BeaconDaemon.run(configuration: configuration, load: load, logger: logger)
    }

    /// Lets the daemon hold as many connections as the hard limit allows.
    static func raiseFileLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            logger.debug("cannot raise the open-file limit")
        }
    }
}

Task.detached { [executorInstalled] in
    exit(await Program.run(arguments: arguments, executorInstalled: executorInstalled))
}
BeaconDaemon.prepare()
// The daemon's signals are blocked and nothing installs a handler, so the main thread sleeps here until exit().
while true { pause() }
