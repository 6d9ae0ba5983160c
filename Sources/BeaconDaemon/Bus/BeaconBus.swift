import BeaconProtocol
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The bus: properties, notifications and their subscribers, served as a ``VarlinkService``.
///
/// Lives on the server's event loop. Calls of one tick change the in-memory state at once; at the end of the
/// tick (``willFlush()``) their store writes are committed in one transaction, then the tick's events are fanned
/// out, then every connection's output is written. So a Set is answered, and watchers learn of it, only after it
/// is durable.
public final class BeaconBus: VarlinkService {
    struct Entry {
        var value: [UInt8]
        var version: Int64
        var modifiedUsec: Int64
        var origin: Origin
        /// The connection that owns the property when it is ephemeral.
        var ephemeralOwner: Int?
        /// Whether the store knows the key as ephemeral.
        var markedEphemeral: Bool
        /// The position, counted over every operation queued since the start, of the pending upsert that writes
        /// this entry's row; it is pending while not below ``BeaconBus/committedOperations``.
        var upsertPosition = -1
        /// The reply to a Get of this entry, encoded by the first Get when short (``cachedGetReplyLimit``). Every
        /// change of the entry clears it, so it cannot describe an older state.
        var getReply: [UInt8]?
    }

    /// The longest Get reply kept with its entry, in bytes.
    static let cachedGetReplyLimit = 2048

    struct Tombstone {
        var version: Int64
        var modifiedUsec: Int64
        var origin: Origin
    }

    static let reservedPrefixes: [String] = ["lifecycle", "session", "system", "daemon"]
    static let versionBlock: Int64 = 100_000

    public let interfaceDescriptions: [(name: String, description: String)] = BeaconInterfaces.all

    let store: PropertyStore
    let logger: Logger
    var limits: DaemonLimits
    var historyLimit: Int
    let startedUsec: Int64
    /// The address clients reach the bus at.
    var address: String { core?.address ?? "" }
    weak var core: VarlinkServerCore?

    // The properties marked `@exclusivity(unchecked)` are written on every Set. Like the whole bus they are used
    // on the event loop only, and no access to them spans a call that could reach them again (each is read or
    // written in place, or passed to code that does not call back into the bus), so the runtime's exclusivity
    // checks would never find a conflict.
    @exclusivity(unchecked) var properties: [String: Entry] = [:]
    @exclusivity(unchecked) var tombstones: [String: Tombstone] = [:]
    /// Versions up to this one may have been seen by clients without surviving; replays from before it resync.
    var historyFloor: Int64 = 0
    @exclusivity(unchecked) var version: Int64 = 0
    /// No version above this one is handed out before the store knows the new ceiling.
    @exclusivity(unchecked) var versionCeiling: Int64 = 0
    var sequence: Int64 = 0
    /// The lifecycle bridge's state and the sleep participants.
    var lifecycle = LifecycleBusState()

    var clients: [Int: BusClient] = [:]
    let watchIndex = PatternIndex()
    let observeIndex = PatternIndex()
    var subscriptionCount = 0

    // The current tick.
    @exclusivity(unchecked) var pendingOperations: [StoreOperation] = []
    /// How many queued operations were committed and removed from the front of ``pendingOperations``.
    @exclusivity(unchecked) var committedOperations = 0
    @exclusivity(unchecked) var pendingWriters: [VarlinkConnection] = []
    @exclusivity(unchecked) var tickChanges: [ChangeEvent] = []
    var tickNotifications: [NotificationEvent] = []
    /// The JSON of ``tickNotifications``, one after the other.
    var tickNotificationBytes: [UInt8] = []
    /// The events being delivered by ``publish()``.
    private var publishingChanges: [ChangeEvent] = []
    private var publishingNotifications: [NotificationEvent] = []
    private var publishingNotificationBytes: [UInt8] = []
    private var tickNumber = 0
    /// ``requestFlush()`` asked the core for a flush that has not begun yet.
    @exclusivity(unchecked) private var flushRequested = false

    /// Opens the bus on the contents of `store`. Runs on the event loop.
    init(
        store: PropertyStore,
        limits: DaemonLimits,
        historyLimit: Int,
        logger: Logger
    ) throws {
        self.store = store
        self.limits = limits
        self.historyLimit = historyLimit
        self.logger = logger
        self.startedUsec = Self.nowUsec()
        try load()
    }

    static func nowUsec() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000
    }

    private func load() throws {
        let contents = try store.load { key in
            logger.error("stored value does not parse; ignoring it", metadata: ["key": "\(key)"])
        }
        var highest = contents.meta["versionCeiling"] ?? 0
        for property in contents.properties {
            properties[property.key] = Entry(
                value: property.value,
                version: property.version,
                modifiedUsec: property.modifiedUsec,
                origin: property.origin,
                ephemeralOwner: nil,
                markedEphemeral: false
            )
            highest = max(highest, property.version)
        }
        for tombstone in contents.tombstones {
            tombstones[tombstone.key] = Tombstone(
                version: tombstone.version,
                modifiedUsec: tombstone.modifiedUsec,
                origin: tombstone.origin
            )
            highest = max(highest, tombstone.version)
        }
        historyFloor = contents.meta["historyFloor"] ?? 0
        version = highest
        versionCeiling = highest
        // Ephemeral properties did not survive the restart: record their deletion for `since` replays.
        let now = Self.nowUsec()
        for key in contents.ephemeralKeys {
            pendingOperations.append(.unmarkEphemeral(key: key))
            guard properties[key] == nil else { continue }
            let deletion = Tombstone(version: nextVersion(), modifiedUsec: now, origin: .daemon)
            tombstones[key] = deletion
            pendingOperations.append(
                .upsertTombstone(
                    StoredTombstone(key: key, version: deletion.version, modifiedUsec: now, origin: .daemon)
                )
            )
        }
        raiseCeiling()
        try store.commit(pendingOperations)
        committedOperations += pendingOperations.count
        pendingOperations.removeAll()
        logger.info(
            "store opened",
            metadata: [
                "path": "\(store.path)", "properties": "\(properties.count)", "tombstones": "\(tombstones.count)",
                "version": "\(version)",
            ]
        )
    }

    /// The next number of the daemon-wide version counter.
    func nextVersion() -> Int64 {
        version += 1
        if version >= versionCeiling { raiseCeiling() }
        return version
    }

    private func raiseCeiling() {
        versionCeiling = version + Self.versionBlock
        pendingOperations.append(.setMeta(name: "versionCeiling", value: versionCeiling))
    }

    /// Records, after a clean shutdown, that no version above the current one was handed out, so that the next
    /// start continues the counter without a gap.
    public func finish() {
        versionCeiling = version
        pendingOperations.append(.setMeta(name: "versionCeiling", value: version))
        commitPending()
    }

    func updateLimits(_ limits: DaemonLimits, historyLimit: Int) {
        self.limits = limits
        self.historyLimit = historyLimit
    }

    // MARK: VarlinkService

    public func attached(to core: VarlinkServerCore) {
        self.core = core
    }

    public func connectionOpened(_ connection: VarlinkConnection) {
        let client = BusClient(connection: connection)
        connection.serviceState = client
        clients[connection.id] = client
    }

    public func connectionClosed(_ connection: VarlinkConnection) {
        guard let client = clients.removeValue(forKey: connection.id) else { return }
        connection.serviceState = nil
        if let subscription = client.subscription {
            removeSubscription(subscription)
            client.subscription = nil
        }
        sleepParticipantLeft(client)
        if !client.ephemeralKeys.isEmpty {
            for key in client.ephemeralKeys.sorted() {
                guard let entry = properties[key], entry.ephemeralOwner == connection.id else { continue }
                delete(key: key, entry: entry, origin: client.origin)
            }
            client.ephemeralKeys.removeAll()
            requestFlush()
        }
    }

    public func handle(_ call: VarlinkCall, on connection: VarlinkConnection) {
        guard let client = connection.serviceState as? BusClient else { return }
        do throws(VarlinkError) {
            switch call.interface {
            case "io.beacon.Properties":
                try handleProperties(call, client: client)
            case "io.beacon.Notifications":
                try handleNotifications(call, client: client)
            case "io.beacon.Daemon":
                try handleDaemon(call, client: client)
            case "io.beacon.Lifecycle":
                try handleLifecycle(call, client: client)
            default:
                throw VarlinkError.interfaceNotFound(String(call.interface))
            }
        } catch {
            connection.reply(error: error)
        }
    }

    public func handle(_ call: VarlinkCallView, on connection: VarlinkConnection) -> Bool {
        guard let client = connection.serviceState as? BusClient else { return false }
        let parameters = CallParameters(call)
        do throws(VarlinkError) {
            if call.methodIs("io.beacon.Notifications.Post") {
                try post(parameters, client: client)
            } else if call.methodIs("io.beacon.Properties.Get") {
                try get(parameters, client: client)
            } else if call.methodIs("io.beacon.Properties.Set") {
                try set(parameters, client: client)
            } else if call.methodIs("io.beacon.Properties.Unset") {
                try unset(parameters, client: client)
            } else {
                return false
            }
        } catch {
            connection.reply(error: error)
        }
        return true
    }

    /// Has ``willFlush()`` run at the end of this tick; asks the core once per tick.
    func requestFlush() {
        guard !flushRequested else { return }
        flushRequested = true
        core?.scheduleFlush()
    }

    public func willFlush() {
        flushRequested = false
        // Delivering can close connections (slow subscribers), whose ephemeral properties then go away with
        // new events: commit and deliver those in the same tick.
        for _ in 0..<8 {
            commitPending()
            guard !tickChanges.isEmpty || !tickNotifications.isEmpty else { return }
            publish()
        }
        core?.scheduleFlush()
    }

    /// Store writes and events wait for the end of the tick: one transaction and one fan-out for every client
    /// that wrote in it.
    public var batchesAtEndOfTick: Bool {
        !pendingOperations.isEmpty || !tickChanges.isEmpty || !tickNotifications.isEmpty
    }

    public func connectionBecameWritable(_ connection: VarlinkConnection) {
        guard let subscription = (connection.serviceState as? BusClient)?.subscription else { return }
        deliverBacklog(subscription)
    }

    // MARK: Tick

    private func commitPending() {
        guard !pendingOperations.isEmpty else {
            pendingWriters.removeAll()
            return
        }
        do {
            try store.commit(pendingOperations)
            committedOperations += pendingOperations.count
            pendingOperations.removeAll(keepingCapacity: true)
            pendingWriters.removeAll(keepingCapacity: true)
        } catch {
            // The writes stay queued and are retried with the next tick. Their callers get no answer: their
            // connections close, so no client believes an unsaved change was saved.
            logger.error("store commit failed: \(error)", metadata: ["operations": "\(pendingOperations.count)"])
            for connection in pendingWriters {
                connection.abort()
            }
            pendingWriters.removeAll()
        }
    }

    /// Queues a store write made on behalf of `connection`.
    func record(_ operation: StoreOperation, by connection: VarlinkConnection?) {
        pendingOperations.append(operation)
        if let connection, pendingWriters.last !== connection {
            pendingWriters.append(connection)
        }
    }

    /// Queues the upsert of `property`'s row on behalf of `connection`; returns its position (see
    /// ``Entry/upsertPosition``).
    ///
    /// When the row's upsert at `earlier` is still pending, the new row takes its place instead: both are in the
    /// same transaction, and no other write to that row came between them (a deletion replaces or removes the
    /// entry, and with it the position).
    func recordUpsert(_ property: StoredProperty, replacing earlier: Int, by connection: VarlinkConnection?) -> Int {
        if earlier >= committedOperations {
            pendingOperations[earlier - committedOperations] = .upsertProperty(property)
            if let connection, pendingWriters.last !== connection {
                pendingWriters.append(connection)
            }
            return earlier
        }
        record(.upsertProperty(property), by: connection)
        return committedOperations + pendingOperations.count - 1
    }

    private func publish() {
        tickNumber &+= 1
        let tick = tickNumber
        swap(&publishingChanges, &tickChanges)
        swap(&publishingNotifications, &tickNotifications)
        swap(&publishingNotificationBytes, &tickNotificationBytes)
        defer {
            publishingChanges.removeAll(keepingCapacity: true)
            publishingNotifications.removeAll(keepingCapacity: true)
            publishingNotificationBytes.removeAll(keepingCapacity: publishingNotificationBytes.capacity <= 1 << 20)
        }
        var touched: [Subscription] = []
        // Events of one key often come in runs: a run's subscribers are looked up once, and each selects the
        // run's events after its start (versions and sequences grow along the tick, so those end the run).
        var matched: [Subscription] = []
        var start = 0
        while start < publishingChanges.count {
            let key = publishingChanges[start].key
            var end = start + 1
            while end < publishingChanges.count && publishingChanges[end].key == key { end += 1 }
            matched.removeAll(keepingCapacity: true)
            watchIndex.forEachMatch(key) { matched.append($0) }
            for subscription in matched {
                var first = start
                while first < end && publishingChanges[first].version <= subscription.start { first += 1 }
                if first < end { subscription.select(Int32(first)..<Int32(end), tick: tick, touched: &touched) }
            }
            start = end
        }
        start = 0
        while start < publishingNotifications.count {
            let name = publishingNotifications[start].name
            var end = start + 1
            while end < publishingNotifications.count && publishingNotifications[end].name == name { end += 1 }
            matched.removeAll(keepingCapacity: true)
            observeIndex.forEachMatch(name) { matched.append($0) }
            for subscription in matched {
                var first = start
                while first < end && publishingNotifications[first].sequence <= subscription.start { first += 1 }
                if first < end { subscription.select(Int32(first)..<Int32(end), tick: tick, touched: &touched) }
            }
            start = end
        }
        var encoded: [SelectionKey: ByteBuffer] = [:]
        var scratch: [UInt8] = []
        for subscription in touched {
            deliver(subscription, encoded: &encoded, scratch: &scratch)
        }
    }

    private func deliver(
        _ subscription: Subscription,
        encoded: inout [SelectionKey: ByteBuffer],
        scratch: inout [UInt8]
    ) {
        let connection = subscription.client.connection
        guard !connection.isClosed else { return }
        if !connection.isWritable || !subscription.backlog.isEmpty {
            holdBack(subscription)
            return
        }
        if subscription.overflow > 0 {
            // Dropped notifications are reported with the next reply.
            let overflow = subscription.overflow
            subscription.overflow = 0
            connection.sendEncoded { buffer in
                encodeSelection(subscription, overflow: overflow, into: &buffer)
            }
            return
        }
        // A selection of every event of its kind, the common case, is keyed without its indices.
        let all =
            subscription.selection.count
            == (subscription.kind.isWatch ? publishingChanges.count : publishingNotifications.count)
        let key = SelectionKey(
            kind: subscription.kind, indices: all ? [] : subscription.selection)
        if let shared = encoded[key] {
            connection.send(shared: shared)
            return
        }
        scratch.removeAll(keepingCapacity: true)
        encodeSelection(subscription, overflow: 0, into: &scratch)
        var buffer = connection.channel.allocator.buffer(capacity: scratch.count)
        buffer.writeBytes(scratch)
        encoded[key] = buffer
        connection.send(shared: buffer)
    }

    private func encodeSelection(_ subscription: Subscription, overflow: Int, into buffer: inout [UInt8]) {
        switch subscription.kind {
        case .watch(let old):
            let selection = subscription.selection
            StreamReply.changes(
                selection,
                of: publishingChanges,
                includingOld: old,
                version: selection.last.map { publishingChanges[Int($0)].version } ?? version,
                overflow: overflow,
                into: &buffer
            )
        case .observe:
            let selection = subscription.selection
            StreamReply.notifications(
                selection,
                of: publishingNotifications,
                in: publishingNotificationBytes,
                sequence: selection.last.map { publishingNotifications[Int($0)].sequence } ?? sequence,
                overflow: overflow,
                into: &buffer
            )
        }
    }

    /// The subscriber reads too slowly: coalesce changes, drop notifications, or disconnect.
    private func holdBack(_ subscription: Subscription) {
        let connection = subscription.client.connection
        if limits.slowSubscriber == .disconnect {
            logger.notice(
                "disconnecting a slow subscriber",
                metadata: [
                    "connection": "\(connection.id)", "pid": "\(connection.credentials.pid)",
                    "queuedBytes": "\(connection.queuedBytes)",
                ]
            )
            connection.abort()
            return
        }
        switch subscription.kind {
        case .watch:
            for index in subscription.selection {
                let event = publishingChanges[Int(index)]
                if let earlier = subscription.backlog[event.key.rawValue] {
                    subscription.overflow += 1
                    subscription.backlog[event.key.rawValue] = ChangeEvent(
                        key: event.key,
                        value: event.value,
                        old: earlier.old,
                        version: event.version,
                        origin: event.origin
                    )
                } else {
                    subscription.backlog[event.key.rawValue] = event
                }
            }
        case .observe:
            subscription.overflow += subscription.selection.count
        }
    }

    /// Sends what was held back while the subscriber was slow.
    private func deliverBacklog(_ subscription: Subscription) {
        let connection = subscription.client.connection
        guard !connection.isClosed else { return }
        let overflow = subscription.overflow
        switch subscription.kind {
        case .watch(let old):
            guard !subscription.backlog.isEmpty else { return }
            let events = subscription.backlog.values.sorted { $0.version < $1.version }
            subscription.backlog.removeAll()
            subscription.overflow = 0
            connection.sendEncoded { buffer in
                StreamReply.changes(
                    0..<Int32(events.count), of: events, includingOld: old, version: events.last?.version ?? version,
                    overflow: overflow,
                    into: &buffer
                )
            }
        case .observe:
            guard overflow > 0 else { return }
            subscription.overflow = 0
            connection.sendEncoded { buffer in
                StreamReply.noNotifications(sequence: sequence, overflow: overflow, into: &buffer)
            }
        }
    }

    // MARK: Subscriptions

    func addSubscription(_ subscription: Subscription) {
        let index = subscription.kind.isWatch ? watchIndex : observeIndex
        for pattern in subscription.patterns {
            index.insert(pattern, for: subscription)
        }
        subscription.client.subscription = subscription
        subscriptionCount += 1
    }

    func removeSubscription(_ subscription: Subscription) {
        let index = subscription.kind.isWatch ? watchIndex : observeIndex
        for pattern in subscription.patterns {
            index.remove(pattern, for: subscription)
        }
        subscriptionCount -= 1
    }
}

extension Subscription.Kind {
    var isWatch: Bool {
        if case .watch = self { return true }
        return false
    }
}
