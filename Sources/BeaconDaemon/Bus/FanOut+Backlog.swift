import BeaconProtocol

extension FanOut {
    /// The subscriber reads too slowly: coalesce changes, drop notifications, or disconnect.
    func holdBack(_ subscription: Subscription) {
        let connection = subscription.client.connection
        if limits.slowSubscriber == .disconnect {
            connection.logLimiter.log(
                logger, .notice, source: "uid \(connection.credentials.uid)", reason: "slow subscriber disconnected",
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
                holdBack(publishingChanges[Int(index)], for: subscription)
            }
        case .observe:
            subscription.overflow += subscription.selection.count
        }
    }

    /// Adds `event` to what a slow watcher is owed: the latest change of each key, `old` keeping the earliest old
    /// value, each change merged away counted in `overflow`.
    func holdBack(_ event: ChangeEvent, for subscription: Subscription) {
        if let earlier = subscription.backlog[event.key.rawValue] {
            subscription.overflow += 1
            subscription.backlog[event.key.rawValue] = event.coalesced(after: earlier)
        } else {
            subscription.backlog[event.key.rawValue] = event
        }
    }

    /// Sends what was held back while the subscriber was slow; `version` is the bus's current version.
    func deliverBacklog(_ subscription: Subscription, version: Int64) {
        let connection = subscription.client.connection
        guard !connection.isClosed else { return }
        let overflow = subscription.overflow
        switch subscription.kind {
        case .watch(let old, let origin):
            guard !subscription.backlog.isEmpty else { return }
            let events = subscription.backlog.values.sorted { $0.version < $1.version }
            subscription.backlog.removeAll()
            subscription.overflow = 0
            connection.sendEncoded { buffer in
                StreamReply.changes(
                    0..<Int32(events.count), of: events, includingOld: old, includingOrigin: origin,
                    version: events.last?.version ?? version, overflow: overflow, into: &buffer)
            }
        case .observe:
            guard overflow > 0 else { return }
            subscription.overflow = 0
            let sequence = self.sequence
            connection.sendEncoded { buffer in
                StreamReply.noNotifications(sequence: sequence, overflow: overflow, into: &buffer)
            }
        }
    }
}
