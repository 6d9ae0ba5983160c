/// `hold`: while delivery is suspended, every event is kept, in order, within `limits.maxQueuedBytes` of the
/// subscription and the uid's budget. Once one is lost, nothing more is kept until delivery resumes: what is
/// delivered then is every event up to the first one lost, and `overflow` counts all that followed, so the gap is
/// exactly after the last one delivered.
struct HoldPolicy: OutboxPolicy {
    var keepsNotifications: Bool { true }

    func keep(_ change: ChangeEvent, in outbox: inout Outbox, account: OutboxAccount) -> OutboxVerdict {
        if outbox.lostSinceTaken || !outbox.append(change, limit: account.maxQueuedBytes, account: account) {
            outbox.lose()
        }
        return .kept
    }

    func keep(
        _ notification: Outbox.Notification, identity: () -> String, in outbox: inout Outbox, account: OutboxAccount
    ) -> OutboxVerdict {
        if outbox.lostSinceTaken || !outbox.append(notification, limit: account.maxQueuedBytes, account: account) {
            outbox.lose()
        }
        return .kept
    }

    func passOver(_ count: Int, in outbox: inout Outbox) -> OutboxVerdict {
        outbox.lose(count)
        return .kept
    }
}
