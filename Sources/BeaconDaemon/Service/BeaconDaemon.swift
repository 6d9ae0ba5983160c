import BeaconProtocol
import Logging
import VarlinkServer

/// The daemon's run: its services under a ServiceRunner. The `beacond` program does the process-wide set-up
/// (allocator, logging, umask, file limit) and then calls ``run(configuration:load:logger:)``. Under a systemd
/// watchdog, the pings come from the event loop that serves clients (``BeaconDaemonService``).
public enum BeaconDaemon {
    /// Reads the configuration from `arguments`, the environment and the configuration file.
    public static func loadConfiguration(arguments: [String]) async throws -> DaemonConfiguration {
        try await DaemonConfiguration.load(arguments: arguments)
    }

    /// Does the part of start-up that needs no configuration: parsing the interfaces' IDL. `beacond` calls it on
    /// its main thread while the event loop reads the configuration and opens the store, on another core where
    /// there is one; the server then finds it done.
    public static func prepare() {
        _ = try? VarlinkInterfaceTable.parsed(BeaconInterfaces.all)
    }

    /// Serves until SIGTERM or SIGINT; returns the process exit status. `load` reads the configuration again on
    /// SIGHUP.
    public static func run(
        configuration: DaemonConfiguration,
        load: @escaping @Sendable () async throws -> DaemonConfiguration,
        logger: Logger
    ) async -> Int32 {
        let daemon = BeaconDaemonService(configuration: configuration, logger: logger)
        do {
            let services: [any Service] = [daemon, try ReloadService(daemon: daemon, load: load)]
            let runner = ServiceRunner(services: services, logger: logger) { await daemon.started() }
            try await runner.run()
            return 0
        } catch {
            logger.critical("beacond failed: \(error)")
            return 1
        }
    }

    public static let usage = """
        usage: beacond [--config PATH] [--address unix:PATH] [--store-path PATH] [--log-level LEVEL]
                       [--limits-<name> VALUE]...
               beacond --version | --help

        The Beacon bus daemon: key-path properties and notifications over varlink on a Unix socket.

        Every setting can come from a flag, a BEACON_* environment variable or the JSON configuration file
        (default $XDG_CONFIG_HOME/beacon/beacond.json), in that order of precedence. For example
        --limits-max-value-size 1024, BEACON_LIMITS_MAX_VALUE_SIZE=1024, {"limits": {"maxValueSize": 1024}}.
        SIGHUP reloads the limits; SIGTERM and SIGINT stop the daemon cleanly.
        """
}
