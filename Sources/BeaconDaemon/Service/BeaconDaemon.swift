import BeaconSystemd
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The `beacond` program: configuration, logging, services, ServiceRunner.
public enum BeaconDaemon {
    /// Runs the daemon until SIGTERM or SIGINT; returns the process exit status.
    public static func main(arguments: [String] = CommandLine.arguments) async -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return 0
        }
        let load: @Sendable () async throws -> DaemonConfiguration = {
            try await DaemonConfiguration.load(arguments: arguments)
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try await load()
        } catch {
            POSIX.writeStandardError("beacond: \(error)\n")
            return 2
        }
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = SystemdLogging.makeHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "beacond")
        // Files and sockets the daemon creates are private to its user.
        umask(0o077)
        raiseFileLimit(logger: logger)

        let daemon = BeaconDaemonService(configuration: configuration, logger: logger)
        var services: [any Service] = [daemon, ReloadService(daemon: daemon, load: load)]
        if let watchdog = SystemdIntegration.watchdogService() {
            services.append(watchdog)
        }
        let runner = ServiceRunner(services: services, logger: logger)
        do {
            try await runner.run()
            return 0
        } catch {
            logger.critical("beacond failed: \(error)")
            return 1
        }
    }

    /// Lets the daemon hold as many connections as the hard limit allows.
    private static func raiseFileLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            logger.debug("cannot raise the open-file limit")
        }
    }

    static let usage = """
        usage: beacond [--config PATH] [--address unix:PATH] [--store-path PATH] [--log-level LEVEL]
                       [--limits-<name> VALUE]...

        The Beacon bus daemon: key-path properties and notifications over varlink on a Unix socket.

        Every setting can come from a flag, a BEACON_* environment variable or the JSON configuration file
        (default $XDG_CONFIG_HOME/beacon/beacond.json), in that order of precedence. For example
        --limits-max-value-size 1024, BEACON_LIMITS_MAX_VALUE_SIZE=1024, {"limits": {"maxValueSize": 1024}}.
        SIGHUP reloads the limits; SIGTERM and SIGINT stop the daemon cleanly.
        """
}
