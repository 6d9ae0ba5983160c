import VarlinkServer

/// Where the bytes an outbox keeps are charged: the subscriber's uid in the server's budget
/// (``DaemonLimits/maxBytesPerUid``), and the subscription's own bound (``DaemonLimits/maxQueuedBytes``) for the
/// policies that keep every event.
struct OutboxAccount {
    /// `nil` in a bus without a server (in-process tests of the bus alone): every charge is taken.
    let budget: VarlinkUidBudget?
    let uid: UInt32
    let maxQueuedBytes: Int

    func charge(_ bytes: Int) -> Bool {
        guard let budget, bytes > 0 else { return true }
        return budget.charge(bytes, to: uid)
    }

    func release(_ bytes: Int) {
        guard let budget, bytes > 0 else { return }
        budget.release(bytes, of: uid)
    }
}

/// What a subscription owes its subscriber and has not sent: the events kept while its delivery is suspended and
/// those held back while its connection is slow, in one place. The outbox keeps, merges and counts them, and charges
/// the bytes it keeps to the uid (``OutboxAccount``); which of its operations an event goes through is the
/// policy's choice (``OutboxPolicy``). Taking the events out gives the bytes back.
struct Outbox {
    typealias Notification = (sequence: Int64, json: [UInt8])

    /// Notifications, in order; `nil` where a later one of the same identity replaced it.
    private var notifications: [Notification?] = []
    /// Where the latest notification of each identity is in ``notifications``.
    private var latestNotification: [String: Int] = [:]
    /// Changes kept one by one, in version order.
    private var changes: [ChangeEvent] = []
    /// The latest change of each key, merged: its `old` is the earliest old value.
    private var latestChange: [String: ChangeEvent] = [:]
    /// Bytes kept, all charged to the account.
    private(set) var bytes = 0
    /// Events kept.
    private(set) var count = 0
    /// Events merged away, or lost, since the last reply: reported with the next one as `overflow`.
    var overflow = 0
    /// Events dropped while suspended, since the subscription began (`drop`).
    var dropped = 0
    /// An event was lost since the outbox was last emptied; policies that keep every event keep nothing more
    /// after a loss, so that what they deliver ends exactly where the gap begins.
    private(set) var lostSinceTaken = false

    /// Whether nothing is kept (an overflow may still be owed).
    var isEmpty: Bool { count == 0 }

    /// What a change costs kept: its key, value and old value, and the rest of its fields.
    static func size(of change: ChangeEvent) -> Int {
        change.key.rawValue.utf8.count + (change.value?.count ?? 0) + (change.old?.count ?? 0) + 64
    }

    // MARK: Keeping

    /// Counts an event lost: in `overflow`, and in ``lostSinceTaken``.
    mutating func lose(_ events: Int = 1) {
        overflow += events
        lostSinceTaken = true
    }

    /// Keeps `change` after the others, within `limit` bytes kept in all; false (keeping nothing) when the limit or
    /// the account refuses it.
    mutating func append(_ change: ChangeEvent, limit: Int, account: OutboxAccount) -> Bool {
        guard admit(Self.size(of: change), limit: limit, account: account) else { return false }
        changes.append(change)
        return true
    }

    /// Counts an event of `size` bytes in, when `limit` and the account take it.
    private mutating func admit(_ size: Int, limit: Int, account: OutboxAccount) -> Bool {
        guard bytes + size <= limit, account.charge(size) else { return false }
        bytes += size
        count += 1
        return true
    }

    /// Keeps `change` as the latest of its key, merged with the one kept before it (counted in `overflow` when
    /// `countingMerges`); false, changing nothing, when the account refuses the bytes.
    mutating func merge(_ change: ChangeEvent, countingMerges: Bool, account: OutboxAccount) -> Bool {
        let name = change.key.rawValue
        if let earlier = latestChange[name] {
            let merged = change.coalesced(after: earlier)
            let growth = Self.size(of: merged) - Self.size(of: earlier)
            if growth > 0 {
                guard account.charge(growth) else { return false }
            } else {
                account.release(-growth)
            }
            latestChange[name] = merged
            bytes += growth
            if countingMerges { overflow += 1 }
        } else {
            guard admit(Self.size(of: change), limit: .max, account: account) else { return false }
            latestChange[name] = change
        }
        return true
    }

    /// Keeps `notification` after the others, within `limit` bytes kept in all; false when the limit or the
    /// account refuses it.
    mutating func append(_ notification: Notification, limit: Int = .max, account: OutboxAccount) -> Bool {
        guard admit(notification.json.count, limit: limit, account: account) else { return false }
        notifications.append(notification)
        return true
    }

    /// Keeps `notification` in place of the one kept before with the same `identity`, which is given back; false
    /// when the account refuses it (the earlier one is gone all the same: a newer one replaced it).
    mutating func replace(_ notification: Notification, identity: String, account: OutboxAccount) -> Bool {
        if let earlier = latestNotification.removeValue(forKey: identity), let replaced = notifications[earlier] {
            notifications[earlier] = nil
            bytes -= replaced.json.count
            count -= 1
            account.release(replaced.json.count)
        }
        guard append(notification, account: account) else { return false }
        latestNotification[identity] = notifications.count - 1
        return true
    }

    // MARK: Taking

    /// Takes out every kept change, in version order, and the overflow; gives their bytes back.
    mutating func takeChanges(account: OutboxAccount) -> (changes: [ChangeEvent], overflow: Int) {
        var taken = changes
        if !latestChange.isEmpty {
            taken.append(contentsOf: latestChange.values)
            taken.sort { $0.version < $1.version }
        }
        let overflow = self.overflow
        empty(account: account)
        return (taken, overflow)
    }

    /// Takes out every kept notification, in order, and the overflow; gives their bytes back.
    mutating func takeNotifications(account: OutboxAccount) -> (notifications: [Notification], overflow: Int) {
        let taken = notifications.compactMap { $0 }
        let overflow = self.overflow
        empty(account: account)
        return (taken, overflow)
    }

    /// Takes out the overflow alone, for a reply of the current events.
    mutating func takeOverflow() -> Int {
        defer { overflow = 0 }
        return overflow
    }

    /// Gives back every byte kept, without taking anything out (the subscription ended).
    mutating func discard(account: OutboxAccount) {
        empty(account: account)
    }

    private mutating func empty(account: OutboxAccount) {
        account.release(bytes)
        let dropped = self.dropped
        self = Outbox()
        self.dropped = dropped
    }
}
