import BeaconProtocol

/// Suspended `drop` subscriptions, out of the fan-out's selection: a burst costs them nothing each.
///
/// Subscriptions with the same kind, patterns and object share a ``Group``, which the index holds once; a tick's
/// events are counted per group (once per event, however many of its patterns match), and each member's dropped
/// count is what its group counted since it joined. So a hundred suspended observers of one name cost one count
/// per event, not a hundred selections. Notifications posted with `deliverImmediately` still reach every member.
final class ParkedSubscriptions {
    final class Group {
        let key: Key
        /// Events that matched the group since it was made.
        fileprivate(set) var matched = 0
        /// The members, each with ``matched`` when it joined.
        fileprivate var members: [ObjectIdentifier: (subscription: Subscription, joined: Int)] = [:]
        /// The tick and position of the last event counted: an event whose key several of the group's patterns
        /// match is counted once.
        fileprivate var countedTick = 0
        fileprivate var countedThrough = -1

        init(key: Key) {
            self.key = key
        }

        /// Whether the group's object filter lets `event` through.
        fileprivate func wants(_ event: NotificationEvent, objects: [String]) -> Bool {
            guard let object = key.object else { return true }
            return event.object >= 0 && objects[Int(event.object)] == object
        }
    }

    struct Key: Hashable {
        let isWatch: Bool
        let patterns: [KeyPattern]
        let object: String?
    }

    private var groups: [Key: Group] = [:]
    private var groupOf: [ObjectIdentifier: Group] = [:]
    private let watchIndex = PatternIndex<Group>()
    private let observeIndex = PatternIndex<Group>()

    /// The number of subscriptions parked.
    var count: Int { groupOf.count }
    /// The number of groups they make.
    var groupCount: Int { groups.count }

    func isParked(_ subscription: Subscription) -> Bool {
        groupOf[ObjectIdentifier(subscription)] != nil
    }

    /// Takes `subscription` out of the selection into its group. It must be out of the fan-out's live index.
    func park(_ subscription: Subscription) {
        let id = ObjectIdentifier(subscription)
        guard groupOf[id] == nil else { return }
        let key = Key(isWatch: subscription.kind.isWatch, patterns: subscription.patterns, object: subscription.object)
        let group: Group
        if let existing = groups[key] {
            group = existing
        } else {
            group = Group(key: key)
            groups[key] = group
            let index = key.isWatch ? watchIndex : observeIndex
            for pattern in key.patterns { index.insert(pattern, for: group) }
        }
        group.members[id] = (subscription, group.matched)
        groupOf[id] = group
    }

    /// Takes `subscription` out of its group; returns the events it dropped while parked. It goes back into the
    /// fan-out's live index.
    @discardableResult
    func unpark(_ subscription: Subscription) -> Int {
        let id = ObjectIdentifier(subscription)
        guard let group = groupOf.removeValue(forKey: id), let member = group.members.removeValue(forKey: id) else {
            return 0
        }
        if group.members.isEmpty {
            groups[group.key] = nil
            let index = group.key.isWatch ? watchIndex : observeIndex
            for pattern in group.key.patterns { index.remove(pattern, for: group) }
        }
        return group.matched - member.joined
    }

    /// The events `subscription` dropped since it was parked.
    func dropped(of subscription: Subscription) -> Int {
        let id = ObjectIdentifier(subscription)
        guard let group = groupOf[id], let member = group.members[id] else { return 0 }
        return group.matched - member.joined
    }

    /// Counts a tick's changes for the watch groups they match.
    func countMatches(_ changes: [ChangeEvent], tick: Int) {
        guard !watchIndex.isEmpty else { return }
        forEachRun(of: changes, in: watchIndex, key: \.key, tick: tick) { group, run in
            group.matched += run.count
        }
    }

    /// Counts a tick's notifications for the observe groups they match, except those posted with
    /// `deliverImmediately`, which are delivered (``immediateDeliveries(_:objects:)``).
    func countMatches(_ notifications: [NotificationEvent], objects: [String], tick: Int) {
        guard !observeIndex.isEmpty else { return }
        forEachRun(of: notifications, in: observeIndex, key: \.name, tick: tick) { group, run in
            if group.key.object == nil {
                group.matched += run.count { !notifications[$0].immediate }
            } else {
                group.matched += run.count {
                    !notifications[$0].immediate && group.wants(notifications[$0], objects: objects)
                }
            }
        }
    }

    /// The members each of the tick's `deliverImmediately` notifications reaches, with the positions of the ones it
    /// reaches, in order.
    func immediateDeliveries(_ notifications: [NotificationEvent], objects: [String]) -> [(
        subscription: Subscription, positions: [Int32]
    )] {
        guard !observeIndex.isEmpty else { return [] }
        var order: [ObjectIdentifier] = []
        var deliveries: [ObjectIdentifier: (subscription: Subscription, positions: [Int32])] = [:]
        for (position, event) in notifications.enumerated() where event.immediate {
            var reached: Set<ObjectIdentifier> = []
            observeIndex.forEachMatch(event.name) { group in
                guard group.wants(event, objects: objects) else { return }
                for (id, member) in group.members where member.subscription.start < event.sequence {
                    guard reached.insert(id).inserted else { continue }
                    if deliveries[id] == nil {
                        order.append(id)
                        deliveries[id] = (member.subscription, [])
                    }
                    deliveries[id]?.positions.append(Int32(position))
                }
            }
        }
        return order.map { deliveries[$0]! }
    }

    /// Calls `body` once for each group matching each run of events with the same key.
    private func forEachRun<Event>(
        of events: [Event], in index: PatternIndex<Group>, key: (Event) -> PropertyKey, tick: Int,
        _ body: (Group, Range<Int>) -> Void
    ) {
        var start = 0
        while start < events.count {
            let name = key(events[start])
            var end = start + 1
            while end < events.count && key(events[end]) == name { end += 1 }
            index.forEachMatch(name) { group in
                guard group.countedTick != tick || group.countedThrough < start else { return }
                group.countedTick = tick
                group.countedThrough = end - 1
                body(group, start..<end)
            }
            start = end
        }
    }
}
