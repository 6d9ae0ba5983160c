/// `limits.slowSubscriber = coalesce`: while a connection reads too slowly, the latest change of each key is kept
/// (each change merged away counted in `overflow`) and notifications are counted in `overflow`, not kept. When the
/// uid's budget cannot take a change, the connection is closed: a change is never lost silently, and the client's
/// reconnection replays what it missed (`since`).
struct CoalesceWhenSlowPolicy: OutboxPolicy {
    var keepsNotifications: Bool { false }

    func keep(_ change: ChangeEvent, in outbox: inout Outbox, account: OutboxAccount) -> OutboxVerdict {
        outbox.merge(change, countingMerges: true, account: account) ? .kept : .disconnect
    }

    func passOver(_ count: Int, in outbox: inout Outbox) -> OutboxVerdict {
        outbox.overflow += count
        return .kept
    }
}

/// `limits.slowSubscriber = disconnect`: a connection that reads too slowly is closed.
struct DisconnectWhenSlowPolicy: OutboxPolicy {
    var keepsNotifications: Bool { false }

    func keep(_ change: ChangeEvent, in outbox: inout Outbox, account: OutboxAccount) -> OutboxVerdict {
        .disconnect
    }

    func passOver(_ count: Int, in outbox: inout Outbox) -> OutboxVerdict {
        .disconnect
    }
}
