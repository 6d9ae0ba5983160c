import BeaconConfiguration
import BeaconProtocol
import Logging
import NIOCore
import Synchronization
import VarlinkServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The daemon as a `Service`: opens the store, serves the bus on the socket until graceful shutdown, and applies
/// reloaded limits.
public final class BeaconDaemonService: Service, Sendable {
    private let initialConfiguration: DaemonConfiguration
    private let logger: Logger
    private let systemd: SystemdIntegration
    private let state = Mutex<(server: VarlinkServer<BeaconBus>?, configuration: DaemonConfiguration)?>(nil)
    /// Start-up is over: the daemon serves, follows its settings files and told the service manager so.
    private let startup = Latch()

    public init(configuration: DaemonConfiguration, logger: Logger) {
        self.initialConfiguration = configuration
        self.logger = logger
        self.systemd = SystemdIntegration(logger: logger)
    }

    public func run() async throws {
        let configuration = initialConfiguration
        // The loop that serves clients is the shared one; in `beacond` it is also Swift concurrency's executor,
        // so the daemon runs on one thread besides the lifecycle bridge's.
        let eventLoop = DaemonEventLoop.shared
        let store: PropertyStore
        let server: VarlinkServer<BeaconBus>
        let listener: VarlinkServer<BeaconBus>.Listener
        do {
            let logger = self.logger
            store = try PropertyStore.openSettingAsideDamage(
                path: configuration.store.path,
                synchronous: PropertyStore.Synchronous(rawValue: configuration.store.synchronous) ?? .normal,
                checkAtStartMaxBytes: configuration.store.checkAtStartMaxBytes
            ) { reason, movedTo in
                logger.critical(
                    "the store is damaged or not an SQLite database; it was set aside and an empty store started",
                    metadata: ["reason": "\(reason)", "movedTo": "\(movedTo)"])
            }
            if let descriptor = systemd.listenDescriptor() {
                listener = .descriptor(descriptor)
            } else if let path = configuration.socketPath {
                try Self.checkFallbackDirectory(of: path)
                listener = .unixPath(path)
            } else {
                throw ConfigurationError(key: "address", reason: "expected unix:PATH")
            }
            let limits = configuration.limits
            let historyLimit = configuration.store.historyLimit
            let fleetRoots = configuration.fleet.prefixes
            let providerWait = TimeAmount.milliseconds(Int64(configuration.fleet.requestTimeoutMs))
            server = try await VarlinkServer.start(
                on: eventLoop,
                listener: listener,
                info: VarlinkServiceInfo(
                    vendor: "Beacon",
                    product: "beacond",
                    version: BeaconBus.softwareVersion,
                    url: ""
                ),
                limits: Self.serverLimits(configuration),
                logger: logger
            ) {
                let bus = try BeaconBus(
                    storage: store,
                    marker: VersionMarker(path: configuration.store.path + "-version"),
                    limits: limits,
                    historyLimit: historyLimit,
                    settings: configuration.settings,
                    logger: logger
                )
                bus.providers.queue.limit = providerWait
                if !fleetRoots.isEmpty { bus.providers.expectProviders(of: fleetRoots) }
                return bus
            }
        } catch {
            logger.critical("cannot start: \(error)")
            throw error
        }
        state.withLock { $0 = (server, configuration) }
        // A client that connected before the daemon existed (socket activation) is answered first: what is left
        // of start-up (signal handling, the settings watches, READY, the lifecycle bridge, the release of start-up
        // memory) runs on the same event loop and would otherwise come before its answer.
        if case .descriptor(let descriptor) = listener, Self.hasPendingConnection(descriptor) {
            try? await server.outputWritten(within: Self.queuedClientHeadStart).get()
        }
        let bridges = DaemonBridges(configuration: configuration, logger: logger)
        let transforms = configuration.bridgeTransforms
        try? await server.withService { $0.lifecycle.bridgeTransforms = transforms }
        let sleepTimeout = configuration.lifecycle.sleepTimeout
        try? await server.withService { $0.lifecycle.attach(bridges.logind, sleepTimeout: sleepTimeout) }
        // The settings directories are followed before READY: a client that writes a lockdown file once the
        // daemon is ready must see it applied. A file changed between the bus's first reading and the watches
        // is picked up by one more reading.
        let settings = configuration.settings
        let settingsWatcher =
            settings.watch
            ? await SettingsWatcher.start(
                directories: settings.schemaDirectories + [settings.lockdownDirectory], on: eventLoop, logger: logger
            ) { change in
                self.logger.debug("settings files changed", metadata: ["change": "\(change)"])
                switch change {
                case .all: server.withServiceOnLoop { $0.reloadSettingsFiles() }
                case .files(let paths): server.withServiceOnLoop { $0.reloadSettingsFiles(changed: paths) }
                }
            } : nil
        if settingsWatcher != nil { try? await server.withService { $0.reloadSettingsFiles() } }
        logger.info(
            "serving",
            metadata: ["address": "\(server.address)", "store": "\(configuration.store.path)"]
        )
        systemd.ready(status: "serving on \(server.address)")
        // A large store is checked beside the serving, so that its size does not delay the first answer.
        if store.checkDeferred {
            store.checkIntegrityInBackground { outcome in
                eventLoop.execute { server.withServiceOnLoop { $0.integrityChecked(outcome) } }
            }
        }
        let watchdog = systemd.startWatchdog(on: eventLoop)
        // What start-up allocated and freed (configuration, store contents) goes back to the system, and so do the
        // pages of code that only start-up ran.
        Memory.releaseFree()
        if let released = Memory.releaseColdCode() {
            logger.debug("released the mappings of code that start-up alone ran", metadata: ["KiB": "\(released)"])
        }
        if let released = Memory.releaseStoreCode() {
            logger.debug("released the mappings of SQLite's code", metadata: ["KiB": "\(released)"])
        }
        startup.trigger()
        let bridgeTask = Task {
            await bridges.run(
                applyLifecycle: { event in
                    try? await server.withService { $0.lifecycle.apply(event) }
                },
                applyBridge: { event in
                    try? await server.withService { $0.lifecycle.apply(event) }
                }
            )
        }

        if systemd.notifier != nil {
            // The service manager's STATUS= line follows the bus, without a timer while nothing changes.
            let systemd = self.systemd
            try? await server.withService { bus in bus.statusReporter = { systemd.status($0) } }
        }
        try? await gracefulShutdown()

        logger.info("shutting down")
        systemd.stopping()
        watchdog?.cancel()
        await settingsWatcher?.stop()
        bridges.shutdown()
        await bridgeTask.value
        await server.shutdown()
        try? await server.withService { $0.finish() }
        state.withLock { $0 = nil }
        do {
            try store.close()
        } catch {
            logger.error("closing the store failed: \(error)")
        }
        logger.info("stopped")
    }

    /// The longest the rest of start-up waits for the first answer when a client was already queued on the
    /// socket. Answering it takes about 0.5 ms (`scripts/activation-time.sh`); a client that connected and says
    /// nothing holds start-up no longer than this.
    static let queuedClientHeadStart = TimeAmount.milliseconds(100)

    /// Whether a client waits to be accepted on the listening socket `descriptor`.
    static func hasPendingConnection(_ descriptor: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
    }

    /// Returns once start-up is over (the daemon told the service manager it is ready), or when the task is
    /// cancelled.
    func started() async {
        await startup.wait()
    }

    /// Reads the configuration again and applies its limits and allowed uids. The address and the store path
    /// take effect at the next start.
    public func reload(_ load: @Sendable () async throws -> DaemonConfiguration) async {
        guard let server = state.withLock({ $0?.server }) else { return }
        systemd.reloading()
        defer { systemd.ready(status: nil) }
        let configuration: DaemonConfiguration
        do {
            configuration = try await load()
        } catch {
            logger.error("reload failed, keeping the current configuration: \(error)")
            return
        }
        let serverLimits = Self.serverLimits(configuration)
        let limits = configuration.limits
        let historyLimit = configuration.store.historyLimit
        try? await server.withCore { core in
            core.update(limits: serverLimits)
            core.service.updateLimits(limits, historyLimit: historyLimit)
            // SIGHUP reads the schema and lockdown files again, whatever else changed.
            core.service.updateSettingsPaths(configuration.settings)
        }
        state.withLock { $0?.configuration = configuration }
        logger.info("configuration reloaded", metadata: ["file": "\(configuration.configFile ?? "none")"])
    }

    /// Runs `body` with the bus on its event loop, for components of the daemon that publish state of their own
    /// (with ``BeaconBus/setSystemProperty(_:_:)`` and ``BeaconBus/postSystemNotification(_:userInfo:)``).
    /// Returns `nil` when the daemon is not serving.
    package func withBus<T: Sendable>(_ body: @escaping @Sendable (BeaconBus) -> T) async -> T? {
        guard let server = state.withLock({ $0?.server }) else { return nil }
        return try? await server.withService(body)
    }

    /// The fallback socket directory, `/tmp/beacon-UID` (``DefaultPaths``), is in a directory anyone may write
    /// to: when it exists already, it must be this user's and private, or another user could have made it to
    /// watch or replace the socket.
    static func checkFallbackDirectory(of socketPath: String) throws {
        let directory = POSIX.parentDirectory(of: socketPath)
        var info = stat()
        guard directory.hasPrefix("/tmp/beacon-"), stat(directory, &info) == 0 else { return }
        guard info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
            throw ConfigurationError(
                key: "address", reason: "\(directory) is not a private directory owned by this user")
        }
    }

    static func serverLimits(_ configuration: DaemonConfiguration) -> VarlinkServerLimits {
        VarlinkServerLimits(
            maxMessageSize: configuration.limits.maxMessageSize,
            maxJSONDepth: configuration.limits.maxJSONDepth,
            maxQueuedBytes: configuration.limits.maxQueuedBytes,
            maxConnectionsPerUid: configuration.limits.maxConnectionsPerUid,
            allowedUIDs: Set(configuration.allowedUIDs),
            maxBytesPerUid: configuration.limits.maxBytesPerUid,
            frameTimeout: .milliseconds(configuration.limits.frameTimeoutMs)
        )
    }
}
