import BeaconProtocol
import BeaconSystemd
import Logging
import NIOCore
import VarlinkServer

/// The bus: properties, notifications and their subscribers, served as a ``VarlinkService``.
///
/// Lives on the server's event loop. The services own their state and their methods: ``PropertiesService``,
/// ``NotificationsService``, ``SettingsService``, ``ProviderRegistry`` and ``LifecycleService``, with
/// ``DaemonStatus``; the method table (``BusMethods``) hands each call to its service. The bus owns the clients and
/// the transaction (``BusTransaction``): calls of one tick change the table at once; at the end of the tick
/// (``tickEnded()``) their store writes are committed in one transaction, then the tick's events are fanned out,
/// then every connection's output is written. So a Set is answered, and watchers learn of it, only after it is
/// durable. When the commit fails, the tick is undone: nothing is published, and every call of the tick is answered
/// with `io.beacon.StoreFailed`.
package final class BeaconBus: VarlinkService {
    package var interfaceDescriptions: [(name: String, description: String)] { BeaconInterfaces.all }

    // The services: each owns its state; the bus owns the transaction (collect the tick's changes, commit, then fan
    // out) and the clients.
    /// The tick's store writes and events, and the request for its end.
    let transaction: BusTransaction
    /// `io.beacon.Properties`: the properties and their versions.
    let properties: PropertiesService
    /// `io.beacon.Notifications`.
    let notifications: NotificationsService
    /// `io.beacon.Settings`: schemas, defaults and locks.
    let settingsService = SettingsService()
    /// Subtrees whose writes a client decides (io.beacon.Providers).
    let providers: ProviderRegistry
    /// The lifecycle bridge's state, the sleep participants and the declarative bridge.
    let lifecycle: LifecycleService
    /// What `Status` reports: the start, the store's health, the service manager's status line.
    let daemonStatus = DaemonStatus()

    let logger: Logger
    var limits: DaemonLimits
    var clients: [Int: BusClient] = [:]
    /// `io.beacon`'s and `io.beacon.Daemon`'s methods, which the bus answers itself.
    private(set) lazy var ownMethods = BusOwnMethods(bus: self)

    /// The store's writes of the tick, and the version marker beside the store.
    var writer: StoreWriter { transaction.writer }
    /// The properties and their versions.
    var table: PropertyTable { properties.table }
    /// Subscriptions and the delivery of the tick's events.
    var fanOut: FanOut { transaction.fanOut }
    var server: VarlinkServerContext? { transaction.server }
    /// The address clients reach the bus at.
    var address: String { server?.address ?? "" }
    var startedUsec: Int64 { daemonStatus.startedUsec }
    /// Told the status line for the service manager when it changes (``reportStatusIfChanged()``); set by the
    /// daemon when a service manager listens.
    package var statusReporter: ((String) -> Void)? {
        get { daemonStatus.reporter }
        set {
            daemonStatus.reporter = newValue
            reportStatusIfChanged()
        }
    }
    /// The schemas and locks in force.
    var settings: SettingsOverlay { settingsService.overlay }

    /// Opens the bus on the contents of `storage`, with the `marker` kept beside it. Runs on the event loop.
    init(
        storage: any PropertyStorage,
        marker: VersionMarker? = nil,
        limits: DaemonLimits,
        historyLimit: Int,
        settings settingsPaths: SettingsPaths? = nil,
        logger: Logger
    ) throws {
        let writer = StoreWriter(storage: storage, marker: marker)
        let table = PropertyTable(writer: writer, historyLimit: historyLimit)
        transaction = BusTransaction(
            writer: writer, table: table, fanOut: FanOut(limits: limits, logger: logger), status: daemonStatus,
            logger: logger)
        providers = ProviderRegistry(logger: logger)
        properties = PropertiesService(
            table: table, transaction: transaction, settings: settingsService, providers: providers, limits: limits,
            logger: logger)
        notifications = NotificationsService(transaction: transaction, limits: limits)
        self.limits = limits
        self.logger = logger
        self.lifecycle = LifecycleService(logger: logger)
        lifecycle.bus = self
        providers.host = self
        settingsService.host = properties
        let recorded = marker?.read()
        let contents = try storage.load()
        var stored = try table.load(contents, now: startedUsec) { table, key, reason in
            logger.error(
                "skipping a stored row the bus could not have written",
                metadata: ["table": "\(table)", "key": "\(key)", "reason": "\(reason)"])
        }
        writer.opened(storedVersion: stored)
        if let recorded {
            // The store kept its tail when it has the row the marker names at its version (or later: a commit whose
            // marker was not written yet). Only when that fails, or the marker names no row, is every row read.
            var keptTail = recorded.stored <= stored
            if !keptTail, let key = recorded.storedKey, let version = try storage.rowVersion(of: key) {
                keptTail = version >= recorded.stored
            }
            if !keptTail {
                stored = max(stored, try storage.highestVersion())
                keptTail = recorded.stored <= stored
            }
            if keptTail {
                writer.opened(storedVersion: recorded.stored, key: recorded.storedKey)
                table.continueAbove(ceiling: recorded.ceiling)
            } else {
                logger.critical(
                    "the store lost committed changes (a damaged or truncated write-ahead log?): it holds changes up to version \(stored), but changes up to \(recorded.stored) were committed; versions continue above \(recorded.ceiling), and watchers resync",
                    metadata: ["store": "\(storage.path)", "marker": "\(marker?.path ?? "")"])
                table.recoverLostTail(ceiling: recorded.ceiling)
                writer.opened(storedVersion: recorded.stored)
            }
        } else if let marker {
            logger.info("no version marker yet; starting one", metadata: ["marker": "\(marker.path)"])
        }
        if let settingsPaths {
            settingsService.paths = settingsPaths
            _ = settingsService.readFiles(limits: limits)
            settingsService.rebuild(quietly: true)
        }
        // What the files say may have changed while the daemon was stopped: replays from before now resync.
        let fingerprint = settings.fingerprint
        if contents.meta["settingsFingerprint"] != fingerprint {
            if contents.meta["settingsFingerprint"] != nil { table.forgetHistory() }
            writer.record(.setMeta(name: "settingsFingerprint", value: fingerprint))
        }
        try writer.commit()
        transaction.recordMarker()
        logger.info(
            "store opened",
            metadata: [
                "path": "\(storage.path)", "properties": "\(table.count)",
                "tombstones": "\(table.tombstones.count)", "version": "\(table.version)",
            ]
        )
    }

    /// Records, after a clean shutdown, that no version above the current one was handed out, so that the next
    /// start continues the counter without a gap.
    package func finish() {
        table.finish()
        commitAndPublish()
        // The keys of the last Sets, for replays after the next start; only when the stop's commit went through.
        if !table.hasUncommittedChanges && !writer.hasPending && !table.saveRecent() {
            logger.warning("cannot keep the recent Sets beside the store; replays after the next start read the store")
        }
    }

    func updateLimits(_ limits: DaemonLimits, historyLimit: Int) {
        self.limits = limits
        fanOut.limits = limits
        properties.limits = limits
        notifications.limits = limits
        table.historyLimit = historyLimit
    }

    // MARK: VarlinkService

    package func attached(to server: VarlinkServerContext) {
        transaction.attached(to: server)
    }

    package func connectionOpened(_ connection: VarlinkConnection) -> BusClient {
        let client = BusClient(connection: connection)
        clients[connection.id] = client
        reportStatusIfChanged()
        return client
    }

    package func connectionClosed(_ connection: VarlinkConnection, client: BusClient) {
        clients.removeValue(forKey: connection.id)
        endStream(of: client)
        properties.deleteEphemeral(of: connection.id, origin: client.origin)
        if providers.hasClaims { providers.providerConnectionClosed(client) }
        if settingsService.unregister(connection.id) { settingsService.rebuild() }
        reportStatusIfChanged()
    }

    package func handle(_ call: VarlinkCall, on connection: VarlinkConnection, client: BusClient) {
        do throws(VarlinkError) {
            try BusMethods.handle(call, client: client, bus: self)
        } catch {
            connection.reply(error: error)
        }
    }

    /// Get, Set, Unset and Post are read in place (``BusMethods/handleInPlace(_:client:bus:)``).
    package func frameHandler(on connection: VarlinkConnection, client: BusClient) -> VarlinkFrameHandler? {
        VarlinkFrameHandler { [self] frame, limits in
            connection.answerInPlace(frame, limits: limits) { handle($0, on: connection, client: client) }
        }
    }

    /// Answers `call` read in place when it is one of the methods read so; otherwise returns false.
    func handle(_ call: VarlinkCallView, on connection: VarlinkConnection, client: BusClient) -> Bool {
        do throws(VarlinkError) {
            return try BusMethods.handleInPlace(call, client: client, bus: self)
        } catch {
            connection.reply(error: error)
            return true
        }
    }

    /// Store writes and events wait for the end of the tick: one transaction and one fan-out for every client
    /// that wrote in it.
    package var batchesAtEndOfTick: Bool { transaction.hasWork }

    package func tickEnded() {
        transaction.endRequested = false
        commitAndPublish()
        // Checked here too: the end of every tick passes this way.
        if statusReporter != nil { reportStatusIfChanged() }
    }

    /// A client that breaks the protocol is told so with `io.beacon.ProtocolError` before its connection closes.
    package var protocolErrorName: String? { IOBeacon.ProtocolError.name }

    package func error(refusing reason: VarlinkRefusal) -> VarlinkError {
        switch reason {
        case .uidNotServed: .permissionDenied()
        case .connectionLimit(let maximum): BusError.limitExceeded("maxConnectionsPerUid", maximum: maximum)
        case .uidBudget(let maximum): BusError.limitExceeded("maxBytesPerUid", maximum: maximum)
        }
    }

    package func connectionBecameWritable(_ connection: VarlinkConnection, client: BusClient) {
        guard let subscription = client.subscription else { return }
        fanOut.flush(subscription)
    }

    // MARK: Tick

    /// Has ``tickEnded()`` run at the end of this tick.
    func requestEndOfTick() {
        transaction.requestEndOfTick()
    }

    /// A client began a Watch, Observe or HoldSleep in this tick.
    func streamBegan(_ client: BusClient) {
        transaction.streamBegan(client)
    }

    /// Commits the tick's store writes, then delivers its events (``BusTransaction/commitAndPublish()``); undoes the
    /// tick when the commit fails.
    private func commitAndPublish() {
        if let error = transaction.commitAndPublish() { undoTick(error) }
    }

    /// The commit of the tick failed: its changes are undone and not published, and its calls are answered with
    /// an error instead.
    private func undoTick(_ error: any Error) {
        transaction.undo(after: error)
        let failure = BusError.storeFailed("\(error)")
        for client in transaction.streams {
            endStream(of: client)
        }
        transaction.streams.removeAll()
        server?.failCallsOfThisTick(with: failure)
        // Connections that closed in the tick still own ephemeral properties: they go away in the next one.
        for owner in table.ephemeralKeys.keys where clients[owner] == nil {
            properties.deleteEphemeral(of: owner, origin: .daemon)
        }
    }

    // MARK: Streams

    /// Ends the Watch, Observe or HoldSleep that `client` runs, if any.
    private func endStream(of client: BusClient) {
        if let subscription = client.subscription {
            fanOut.remove(subscription)
            client.subscription = nil
        }
        if client.chargedBytes > 0 {
            server?.budget.release(client.chargedBytes, of: client.connection.credentials.uid)
            client.chargedBytes = 0
        }
        lifecycle.streamEnded(of: client)
    }

    /// `io.beacon.Suspend`: suspends the delivery of the stream on this connection, once more.
    func suspend(_ parameters: CallParameters, client: BusClient) {
        client.suspensions += 1
        client.connection.reply([:])
    }

    /// `io.beacon.Resume`: takes back one Suspend; the last one delivers what was kept.
    func resume(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        guard client.suspensions > 0 else { throw BusError.notSuspended() }
        client.suspensions -= 1
        if client.suspensions == 0, let subscription = client.subscription {
            fanOut.resumeDelivery(of: subscription)
        }
        client.connection.reply([:])
    }
}
