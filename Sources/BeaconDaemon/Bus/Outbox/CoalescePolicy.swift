/// `coalesce`: while delivery is suspended, the latest change of each key (its `old` the earliest old value) and
/// the latest notification of each name and object are kept. A notification the uid's budget cannot take is lost
/// and counted in `overflow`; a change it cannot take closes the connection, as for a slow subscriber
/// (``CoalesceWhenSlowPolicy``), so that no key's latest value is lost silently.
struct CoalescePolicy: OutboxPolicy {
    var keepsNotifications: Bool { true }
    var coalescesNotifications: Bool { true }

    func keep(_ change: ChangeEvent, in outbox: inout Outbox, account: OutboxAccount) -> OutboxVerdict {
        outbox.merge(change, countingMerges: false, account: account) ? .kept : .disconnect
    }

    func keep(
        _ notification: Outbox.Notification, identity: () -> String, in outbox: inout Outbox, account: OutboxAccount
    ) -> OutboxVerdict {
        if !outbox.replace(notification, identity: identity(), account: account) { outbox.lose() }
        return .kept
    }

    func passOver(_ count: Int, in outbox: inout Outbox) -> OutboxVerdict {
        outbox.lose(count)
        return .kept
    }
}
