/// `drop`: events are lost while delivery is suspended, and counted in ``Outbox/dropped``. A suspended `drop`
/// subscription leaves the fan-out's selection after its first lost tick (``ParkedSubscriptions``).
struct DropPolicy: OutboxPolicy {
    var keepsNotifications: Bool { false }

    func keep(_ change: ChangeEvent, in outbox: inout Outbox, account: OutboxAccount) -> OutboxVerdict {
        outbox.dropped += 1
        return .kept
    }

    func passOver(_ count: Int, in outbox: inout Outbox) -> OutboxVerdict {
        outbox.dropped += count
        return .kept
    }
}
