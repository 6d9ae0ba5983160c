/// `deliverImmediately`: the subscription is never suspended, so nothing is ever kept for that reason
/// (``FanOut/isSuspended(_:)`` is false for it). What would reach its outbox anyway is counted as ``DropPolicy``
/// counts it.
struct DeliverImmediatelyPolicy: OutboxPolicy {
    var keepsNotifications: Bool { false }

    func keep(_ change: ChangeEvent, in outbox: inout Outbox, account: OutboxAccount) -> OutboxVerdict {
        DropPolicy().keep(change, in: &outbox, account: account)
    }

    func passOver(_ count: Int, in outbox: inout Outbox) -> OutboxVerdict {
        DropPolicy().passOver(count, in: &outbox)
    }
}
