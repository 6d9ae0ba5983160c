import BeaconProtocol
import BeaconSystemd
import Logging
import NIOCore
import VarlinkServer

/// The bus: properties, notifications and their subscribers, served as a ``VarlinkService``.
///
/// Lives on the server's event loop and composes parts with one concern each: the ``PropertyTable``, the
/// ``StoreWriter`` behind a ``PropertyStorage``, the ``FanOut`` of events to subscribers, the ``SleepParticipants``
/// and the method table (``BusMethods``). Calls of one tick change the table at once; at the end of the tick
/// (``tickEnded()``) their store writes are committed in one transaction, then the tick's events are fanned out,
/// then every connection's output is written. So a Set is answered, and watchers learn of it, only after it is
/// durable. When the commit fails, the tick is undone: nothing is published, and every call of the tick is answered
/// with `io.beacon.StoreFailed`.
package final class BeaconBus: VarlinkService {
    static let reservedPrefixes: [String] = ["lifecycle", "session", "system", "desktop", "daemon"]

    package var interfaceDescriptions: [(name: String, description: String)] { BeaconInterfaces.all }

    // The services: each owns its state; the bus owns the transaction (collect the tick's changes, commit, then fan
    // out) and the clients.
    /// The store's writes of the tick, and the version marker beside the store.
    let writer: StoreWriter
    /// The properties and their versions.
    let table: PropertyTable
    /// Subscriptions and the delivery of the tick's events.
    let fanOut: FanOut
    /// Schemas, defaults and locks.
    let settingsService = SettingsService()
    /// Subtrees whose writes a client decides (io.beacon.Providers).
    let providers: ProviderRegistry
    /// The lifecycle bridge's state, the sleep participants and the declarative bridge.
    let lifecycle: LifecycleService
    /// What `Status` reports: the start, the store's health, the service manager's status line.
    let daemonStatus = DaemonStatus()

    let logger: Logger
    var limits: DaemonLimits
    private(set) var server: VarlinkServerContext?
    var clients: [Int: BusClient] = [:]
    /// The end of the current tick: streams begun in it, and whether the server was asked for it (read by every
    /// Set, ``requestEndOfTick()``).
    private var tick = TickState()

    struct TickState {
        /// Clients that began a stream in this tick: a failed commit ends their streams again.
        var streams: [BusClient] = []
        /// ``requestEndOfTick()`` asked the server for an end of tick that has not begun yet.
        var endRequested = false
    }

    /// The address clients reach the bus at.
    var address: String { server?.address ?? "" }
    /// The version marker beside the store.
    var marker: VersionMarker? { writer.marker }
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
    var settings: SettingsOverlay {
        get { settingsService.overlay }
        set { settingsService.overlay = newValue }
    }
    /// ``settings``' epoch, read by every Set of a key with a cached rule.
    var settingsEpoch: UInt32 { settingsService.epoch }
    /// Whether any schema or lock is in force: what the hot paths check, without touching ``settings``.
    var hasSettings: Bool { settingsService.hasSettings }

    /// Opens the bus on the contents of `storage`, with the `marker` kept beside it. Runs on the event loop.
    init(
        storage: any PropertyStorage,
        marker: VersionMarker? = nil,
        limits: DaemonLimits,
        historyLimit: Int,
        settings settingsPaths: SettingsPaths? = nil,
        logger: Logger
    ) throws {
        self.writer = StoreWriter(storage: storage, marker: marker)
        self.table = PropertyTable(writer: writer, historyLimit: historyLimit)
        self.fanOut = FanOut(limits: limits, logger: logger)
        self.limits = limits
        self.logger = logger
        self.lifecycle = LifecycleService(logger: logger)
        self.providers = ProviderRegistry(logger: logger)
        lifecycle.bus = self
        providers.host = self
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
            rebuildSettings(quietly: true)
        }
        // What the files say may have changed while the daemon was stopped: replays from before now resync.
        let fingerprint = settings.fingerprint
        if contents.meta["settingsFingerprint"] != fingerprint {
            if contents.meta["settingsFingerprint"] != nil { table.forgetHistory() }
            writer.record(.setMeta(name: "settingsFingerprint", value: fingerprint))
        }
        try writer.commit()
        recordMarker()
        logger.info(
            "store opened",
            metadata: [
                "path": "\(storage.path)", "properties": "\(table.count)",
                "tombstones": "\(table.tombstones.count)", "version": "\(table.version)",
            ]
        )
    }

    /// Writes the ceiling and the highest stored version to the marker after a commit.
    private func recordMarker() {
        guard let marker else { return }
        let contents = VersionMarker.Contents(
            ceiling: table.versionCeiling, stored: writer.storedVersion, storedKey: writer.storedKey)
        if !marker.record(contents) {
            logger.error("cannot write the version marker", metadata: ["marker": "\(marker.path)"])
        }
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
        table.historyLimit = historyLimit
    }

    // MARK: VarlinkService

    package func attached(to server: VarlinkServerContext) {
        self.server = server
        fanOut.budget = server.budget
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
        deleteEphemeral(of: connection.id, origin: client.origin)
        if providers.hasClaims { providers.providerConnectionClosed(client) }
        if settingsService.unregister(connection.id) { rebuildSettings() }
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
    package var batchesAtEndOfTick: Bool { writer.hasPending || fanOut.hasEvents }

    package func tickEnded() {
        tick.endRequested = false
        commitAndPublish()
        // Checked here too: the end of every tick passes this way.
        if statusReporter != nil { reportStatusIfChanged() }
    }

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

    /// Has ``tickEnded()`` run at the end of this tick; asks the server once per tick.
    func requestEndOfTick() {
        guard !tick.endRequested else { return }
        tick.endRequested = true
        server?.scheduleEndOfTick()
    }

    /// A client began a Watch, Observe or HoldSleep in this tick.
    func streamBegan(_ client: BusClient) {
        tick.streams.append(client)
        requestEndOfTick()
    }

    /// Commits the tick's store writes, then delivers its events. Delivering can close connections (slow
    /// subscribers), whose ephemeral properties then go away with new events: those are committed and delivered in
    /// the same tick.
    private func commitAndPublish() {
        // A tick of reads only (a Get, say) has nothing to commit or deliver.
        guard writer.hasPending || fanOut.hasEvents || !tick.streams.isEmpty || table.hasUncommittedChanges else {
            return
        }
        for _ in 0..<8 {
            let writes = writer.hasPending
            do {
                try writer.commit()
            } catch {
                undoTick(error)
                return
            }
            if writes { recordMarker() }
            if writes, let failure = daemonStatus.storeFailure {
                daemonStatus.storeFailure = nil
                logger.notice(
                    "the store takes writes again",
                    metadata: ["failingSinceUsec": "\(failure.sinceUsec)", "lastError": "\(failure.reason)"])
            }
            table.committed()
            if !tick.streams.isEmpty { tick.streams.removeAll(keepingCapacity: true) }
            guard fanOut.hasEvents else { return }
            fanOut.publish()
        }
        requestEndOfTick()
    }

    /// The commit of the tick failed: its changes are undone and not published, and its calls are answered with
    /// an error instead.
    private func undoTick(_ error: any Error) {
        // Logged when the store starts failing and when it recovers, not at every failed tick.
        if daemonStatus.storeFailure == nil {
            logger.error(
                "store commit failed; writes fail until it succeeds again: \(error)",
                metadata: ["operations": "\(writer.pending.count)"])
        }
        daemonStatus.storeFailure = (daemonStatus.storeFailure?.sinceUsec ?? WallClock.nowUsec(), "\(error)")
        table.rollBack()
        fanOut.discardTick()
        let failure = BusError.storeFailed("\(error)")
        for client in tick.streams {
            endStream(of: client)
        }
        tick.streams.removeAll()
        if let server {
            for connection in server.tick.queuedConnections {
                connection.failCallsOfThisTick(with: failure)
            }
        }
        // Connections that closed in the tick still own ephemeral properties: they go away in the next one.
        for owner in table.ephemeralKeys.keys where clients[owner] == nil {
            deleteEphemeral(of: owner, origin: .daemon)
        }
    }

    // MARK: Changes

    /// Stores a value and queues its change event; returns the change's version. `index` is the key's entry in
    /// the table, if it has one.
    func store(
        key: PropertyKey,
        value: [UInt8],
        at index: [String: PropertyTable.Entry].Index?,
        ephemeralOwner: Int?,
        origin: Origin,
        rule: SettingsOverlay.Rule = .unknown
    ) -> Int64 {
        let change = table.set(
            key: key, value: value, at: index, ephemeralOwner: ephemeralOwner, origin: origin,
            now: WallClock.nowUsec())
        let version = change.version
        publish(change, rule: rule)
        requestEndOfTick()
        return version
    }

    /// Deletes a property and queues its change event; returns the deletion's version, `nil` when it had no value.
    @discardableResult
    func delete(_ name: String, origin: Origin) throws(VarlinkError) -> Int64? {
        // The table deletes what it holds in memory: a key not read since the start is read first.
        guard try table.index(forKey: name) != nil,
            let change = table.delete(name, origin: origin, now: WallClock.nowUsec())
        else { return nil }
        publish(change)
        requestEndOfTick()
        return change.version
    }

    private func deleteEphemeral(of owner: Int, origin: Origin) {
        let changes = table.deleteEphemeral(of: owner, origin: origin, now: WallClock.nowUsec())
        guard !changes.isEmpty else { return }
        for change in changes { publish(change) }
        requestEndOfTick()
    }

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
        lifecycle.sleep.left(client.connection.id, logger: logger)
    }

    /// What a subscription's index entries cost, charged to its uid: about 512 bytes a pattern besides its text.
    static func cost(of patterns: [KeyPattern]) -> Int {
        patterns.reduce(0) { $0 + 512 + $1.rawValue.utf8.count }
    }

    /// Starts `subscription`, or fails (and closes the connection after the error) when its uid's budget cannot
    /// take it.
    func addSubscription(_ subscription: Subscription) throws(VarlinkError) {
        let client = subscription.client
        let cost = Self.cost(of: subscription.patterns)
        if let budget = server?.budget {
            guard budget.charge(cost, to: client.connection.credentials.uid) else {
                client.connection.close()
                throw BusError.limitExceeded("maxBytesPerUid", maximum: budget.limit)
            }
            client.chargedBytes = cost
        }
        fanOut.add(subscription)
        subscription.client.subscription = subscription
        streamBegan(subscription.client)
    }
}
