import BeaconProtocol
import Logging
import NIOCore
import VarlinkServer

/// Subscriptions and fan-out: the pattern indices of the running Watch and Observe calls, the tick's change events
/// and notifications, and their delivery, one message per subscriber and tick, encoded once per distinct
/// selection. Events a subscription cannot take now, suspended or slow, go into its ``Outbox`` through a policy
/// (``FanOut+Outbox.swift``); suspended `drop` subscriptions leave the selection (``ParkedSubscriptions``).
final class FanOut {
    var limits: DaemonLimits {
        didSet { whenSlow = limits.slowSubscriber.outboxPolicy }
    }
    let logger: Logger
    /// Who is subscribed to what.
    let subscribers = SubscriberIndex()
    /// What becomes of the events of a subscriber that reads too slowly (``DaemonLimits/slowSubscriber``).
    private(set) var whenSlow: any OutboxPolicy
    /// The number of the last notification posted.
    private(set) var sequence: Int64 = 0

    /// The current tick's events, written on every Set or Post. A post takes the notification bytes out while it
    /// appends one (one access to the property), then gives them back.
    var tick = EventBatch()
    /// The events being delivered by ``publish()``.
    private(set) var publishing = EventBatch()
    private var tickNumber = 0
    /// Where ``publish()`` encodes a selection before copying it into its shared buffer: kept from tick to tick (up
    /// to 1 MiB), so that a burst's batches are not grown again by doubling at every tick.
    private var scratch: [UInt8] = []
    /// The memory held for each uid (``DaemonLimits/maxBytesPerUid``), which the events kept for its suspended
    /// subscriptions count against; `nil` before the server attaches (in-process tests without one).
    var budget: VarlinkUidBudget?
    /// The subscriptions suspended while the session is not active, and whether it is.
    var session = SessionFollowers()

    /// Whether the session is active, as the lifecycle bridge last said (active until it says otherwise), and the
    /// subscriptions suspended while it is not.
    struct SessionFollowers {
        var active = true
        var subscriptions: [ObjectIdentifier: Subscription] = [:]
    }

    var watchIndex: PatternIndex<Subscription> { subscribers.watch }
    var observeIndex: PatternIndex<Subscription> { subscribers.observe }
    /// Suspended `drop` subscriptions, out of the indices above.
    var parked: ParkedSubscriptions { subscribers.parked }
    var subscriptionCount: Int { subscribers.count }

    init(limits: DaemonLimits, logger: Logger) {
        self.limits = limits
        self.logger = logger
        self.whenSlow = limits.slowSubscriber.outboxPolicy
    }

    /// Whether the tick has events to deliver.
    var hasEvents: Bool { !tick.changes.isEmpty || !tick.notifications.isEmpty }

    // MARK: Subscriptions

    func add(_ subscription: Subscription) {
        insert(subscription)
        subscribers.count += 1
        if subscription.followsSession { session.subscriptions[ObjectIdentifier(subscription)] = subscription }
    }

    /// Ends `subscription`: out of the selection, and what its outbox kept given back.
    func remove(_ subscription: Subscription) {
        if parked.isParked(subscription) {
            parked.unpark(subscription)
        } else {
            removeFromIndex(subscription)
        }
        subscription.outbox.discard(account: account(of: subscription))
        subscribers.count -= 1
        if subscription.followsSession { session.subscriptions[ObjectIdentifier(subscription)] = nil }
    }

    /// Puts `subscription` into the selection.
    func insert(_ subscription: Subscription) {
        let index = subscription.kind.isWatch ? watchIndex : observeIndex
        for pattern in subscription.patterns {
            index.insert(pattern, for: subscription)
        }
    }

    /// Takes `subscription` out of the selection.
    func removeFromIndex(_ subscription: Subscription) {
        let index = subscription.kind.isWatch ? watchIndex : observeIndex
        for pattern in subscription.patterns {
            index.remove(pattern, for: subscription)
        }
    }

    // MARK: Events of the tick

    func append(_ change: consuming ChangeEvent) {
        tick.changes.append(change)
    }

    /// Posts the notification begun at `start` of `bytes`, the tick's notification bytes taken out of
    /// ``EventBatch/notificationBytes`` of ``tick`` (see ``NotificationEvent/begin(_:into:)``), from the origin whose JSON is
    /// `origin`; returns its sequence number.
    func post(
        _ name: PropertyKey, begun start: Int, in bytes: inout [UInt8], origin: [UInt8], object: String? = nil,
        immediate: Bool = false
    ) -> Int64 {
        if tick.startSequence == nil { tick.startSequence = sequence }
        sequence += 1
        NotificationEvent.end(sequence: sequence, origin: origin, into: &bytes)
        var objectIndex: Int32 = -1
        if let object {
            objectIndex = Int32(tick.objects.count)
            tick.objects.append(object)
        }
        if immediate { tick.hasImmediate = true }
        tick.notifications.append(
            NotificationEvent(
                name: name, sequence: sequence, start: start, end: bytes.count, object: objectIndex,
                immediate: immediate))
        return sequence
    }

    /// The tick's changes never happened (their commit failed): nothing of the tick is delivered, and the
    /// notification sequence is as before it.
    func discardTick() {
        if let start = tick.startSequence { sequence = start }
        tick.empty()
    }

    // MARK: Delivery

    /// Delivers the tick's events to their subscribers.
    func publish() {
        tickNumber &+= 1
        let tick = tickNumber
        swap(&publishing, &self.tick)
        defer { publishing.empty() }
        var touched: [Subscription] = []
        var matched: [Subscription] = []
        select(publishing.changes, from: watchIndex, tick: tick, touched: &touched, matched: &matched) {
            ($0.key, $0.version)
        }
        select(publishing.notifications, from: observeIndex, tick: tick, touched: &touched, matched: &matched) {
            ($0.name, $0.sequence)
        }
        if parked.count > 0 {
            parked.countMatches(publishing.changes, tick: tick)
            parked.countMatches(publishing.notifications, objects: publishing.objects, tick: tick)
            if publishing.hasImmediate { deliverImmediateToParked() }
        }
        var encoded: [SelectionKey: ByteBuffer] = [:]
        var scratch: [UInt8] = []
        swap(&scratch, &self.scratch)
        var parking: [Subscription] = []
        for subscription in touched {
            deliver(subscription, encoded: &encoded, scratch: &scratch, parking: &parking)
        }
        if scratch.capacity <= 1 << 20 { swap(&scratch, &self.scratch) }
        for subscription in parking { park(subscription) }
    }

    /// Selects each of `events` for the subscriptions of `index` whose patterns match its key and that started
    /// before it; `identity` gives an event's key and its version or sequence. Events of one key often come in
    /// runs: a run's subscribers are looked up once, and each selects the run's events after its start (versions
    /// and sequences grow along the tick).
    @inline(__always)
    private func select<Event>(
        _ events: [Event],
        from index: PatternIndex<Subscription>,
        tick: Int,
        touched: inout [Subscription],
        matched: inout [Subscription],
        identity: (Event) -> (key: PropertyKey, ordinal: Int64)
    ) {
        var start = 0
        while start < events.count {
            let key = identity(events[start]).key
            var end = start + 1
            while end < events.count && identity(events[end]).key == key { end += 1 }
            matched.removeAll(keepingCapacity: true)
            index.forEachMatch(key) { matched.append($0) }
            for subscription in matched {
                var first = start
                while first < end && identity(events[first]).ordinal <= subscription.start { first += 1 }
                if first < end { subscription.select(Int32(first)..<Int32(end), tick: tick, touched: &touched) }
            }
            start = end
        }
    }

    private func deliver(
        _ subscription: Subscription,
        encoded: inout [SelectionKey: ByteBuffer],
        scratch: inout [UInt8],
        parking: inout [Subscription]
    ) {
        let connection = subscription.client.connection
        guard !connection.isClosed else { return }
        if let object = subscription.object {
            subscription.selection.removeAll { position in
                let index = publishing.notifications[Int(position)].object
                return index < 0 || publishing.objects[Int(index)] != object
            }
            if subscription.selection.isEmpty { return }
        }
        if isSuspended(subscription) {
            keepSelection(of: subscription, policy: subscription.policy.outboxPolicy, suspended: true)
            if subscription.policy == .drop { parking.append(subscription) }
            return
        }
        if !connection.isWritable || !subscription.outbox.isEmpty {
            keepSelection(of: subscription, policy: whenSlow, suspended: false)
            return
        }
        if subscription.outbox.overflow > 0 {
            // Dropped notifications are reported with the next reply.
            let overflow = subscription.outbox.takeOverflow()
            connection.sendEncoded { buffer in
                encodeSelection(subscription, overflow: overflow, into: &buffer)
            }
            return
        }
        // A selection of every event of its kind, the common case, is keyed without its indices.
        let all =
            subscription.selection.count
            == (subscription.kind.isWatch ? publishing.changes.count : publishing.notifications.count)
        let key = SelectionKey(kind: subscription.kind, indices: all ? [] : subscription.selection)
        if let shared = encoded[key] {
            connection.send(shared: shared)
            return
        }
        scratch.removeAll(keepingCapacity: true)
        encodeSelection(subscription, overflow: 0, into: &scratch)
        var buffer = ByteBufferAllocator().buffer(capacity: scratch.count)
        buffer.writeBytes(scratch)
        encoded[key] = buffer
        connection.send(shared: buffer)
    }

    private func encodeSelection(_ subscription: Subscription, overflow: Int, into buffer: inout [UInt8]) {
        let selection = subscription.selection
        switch subscription.kind {
        case .watch(let old, let origin):
            StreamReply.changes(
                selection,
                of: publishing.changes,
                includingOld: old,
                includingOrigin: origin,
                version: selection.last.map { publishing.changes[Int($0)].version } ?? 0,
                overflow: overflow,
                into: &buffer
            )
        case .observe:
            StreamReply.notifications(
                selection,
                of: publishing.notifications,
                in: publishing.notificationBytes,
                sequence: selection.last.map { publishing.notifications[Int($0)].sequence } ?? sequence,
                overflow: overflow,
                into: &buffer
            )
        }
    }
}

extension Subscription.Kind {
    var isWatch: Bool {
        if case .watch = self { return true }
        return false
    }
}

/// The events of one tick: changes, notifications with their JSON one after the other and the object strings they
/// name (``NotificationEvent/object``).
struct EventBatch {
    var changes: [ChangeEvent] = []
    var notifications: [NotificationEvent] = []
    var notificationBytes: [UInt8] = []
    var objects: [String] = []
    /// Whether a notification was posted with `deliverImmediately`.
    var hasImmediate = false
    /// The sequence before the first notification.
    var startSequence: Int64?

    /// Empties the batch, keeping the arrays' storage (the notification bytes' up to 1 MiB).
    mutating func empty() {
        changes.removeAll(keepingCapacity: true)
        notifications.removeAll(keepingCapacity: true)
        notificationBytes.removeAll(keepingCapacity: notificationBytes.capacity <= 1 << 20)
        if !objects.isEmpty { objects.removeAll() }
        hasImmediate = false
        startSequence = nil
    }
}

/// Who is subscribed to what: the pattern indices of the running Watch and Observe calls, and the suspended `drop`
/// subscriptions taken out of them (``ParkedSubscriptions``).
final class SubscriberIndex {
    let watch = PatternIndex<Subscription>()
    let observe = PatternIndex<Subscription>()
    let parked = ParkedSubscriptions()
    /// Every subscription, parked or not.
    var count = 0
}
