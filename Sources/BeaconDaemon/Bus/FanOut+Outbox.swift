import BeaconProtocol
import Logging
import NIOCore

extension FanOut {
    /// Whether events for `subscription` are kept rather than sent.
    @inline(__always)
    func isSuspended(_ subscription: Subscription) -> Bool {
        subscription.policy != .deliverImmediately
            && (subscription.client.suspensions > 0 || (subscription.followsSession && !session.active))
    }

    /// Where the bytes kept for `subscription` are charged.
    func account(of subscription: Subscription) -> OutboxAccount {
        OutboxAccount(
            budget: budget, uid: subscription.client.connection.credentials.uid, maxQueuedBytes: limits.maxQueuedBytes)
    }

    /// Events of the tick were selected for a subscription that cannot take them now, because it is `suspended` or
    /// its connection is slow: they go through `policy` into its outbox. While suspended, notifications posted with
    /// `deliverImmediately` go out at once, after everything kept before them.
    func keepSelection(of subscription: Subscription, policy: any OutboxPolicy, suspended: Bool) {
        var verdict = OutboxVerdict.kept
        let account = account(of: subscription)
        switch subscription.kind {
        case .watch:
            for index in subscription.selection where verdict == .kept {
                verdict = policy.keep(publishing.changes[Int(index)], in: &subscription.outbox, account: account)
            }
        case .observe:
            let hasImmediate =
                suspended && subscription.selection.contains { publishing.notifications[Int($0)].immediate }
            // Counting needs no copy of anything.
            if !policy.keepsNotifications && !hasImmediate {
                verdict = policy.passOver(subscription.selection.count, in: &subscription.outbox)
                break
            }
            // Coalescing keeps the last of each name and object: earlier ones of the tick are not copied at all.
            var skipped = Set<Int32>()
            if policy.coalescesNotifications && subscription.selection.count > 1 && !hasImmediate {
                var seen = Set<String>()
                for index in subscription.selection.reversed()
                where !seen.insert(identity(of: publishing.notifications[Int(index)])).inserted {
                    skipped.insert(index)
                }
            }
            var immediate: [Outbox.Notification] = []
            var overflow = 0
            publishing.notificationBytes.withUnsafeBufferPointer { bytes in
                for index in subscription.selection where verdict == .kept && !skipped.contains(index) {
                    let event = publishing.notifications[Int(index)]
                    if hasImmediate && event.immediate {
                        let kept = subscription.outbox.takeNotifications(account: account)
                        immediate.append(contentsOf: kept.notifications)
                        overflow += kept.overflow
                        immediate.append((event.sequence, Array(bytes[event.start..<event.end])))
                    } else if !policy.keepsNotifications {
                        verdict = policy.passOver(1, in: &subscription.outbox)
                    } else {
                        verdict = policy.keep(
                            (event.sequence, Array(bytes[event.start..<event.end])),
                            identity: { identity(of: event) }, in: &subscription.outbox, account: account)
                    }
                }
            }
            if !immediate.isEmpty {
                sendNotifications(
                    immediate, overflow: overflow + subscription.outbox.takeOverflow(), to: subscription)
            }
        }
        if verdict == .disconnect {
            if suspended {
                disconnect(
                    subscription, reason: "kept events over the uid's budget",
                    "disconnecting a suspended subscriber whose kept changes the uid's budget cannot take")
            } else {
                disconnect(subscription, reason: "slow subscriber disconnected", "disconnecting a slow subscriber")
            }
        }
    }

    /// What coalescing tells notifications apart by: the name, and the object when there is one.
    private func identity(of event: NotificationEvent) -> String {
        event.object >= 0 ? event.name.rawValue + "\u{0}" + publishing.objects[Int(event.object)] : event.name.rawValue
    }

    /// Closes the connection of a subscriber whose policy gave up on it.
    private func disconnect(_ subscription: Subscription, reason: String, _ message: Logger.Message) {
        let connection = subscription.client.connection
        connection.logLimiter.log(
            logger, .notice, source: "uid \(connection.credentials.uid)", reason: reason, message,
            metadata: [
                "connection": "\(connection.id)", "pid": "\(connection.credentials.pid)",
                "queuedBytes": "\(connection.queuedBytes)", "keptBytes": "\(subscription.outbox.bytes)",
            ]
        )
        connection.abort()
    }

    /// Sends what the outbox of `subscription` holds, as one reply, once it is neither suspended nor slow: on
    /// resume, and when its connection can take more.
    func flush(_ subscription: Subscription) {
        let connection = subscription.client.connection
        guard !connection.isClosed, connection.isWritable, !isSuspended(subscription) else { return }
        guard !subscription.outbox.isEmpty || subscription.outbox.overflow > 0 else { return }
        let account = account(of: subscription)
        switch subscription.kind {
        case .watch(let old, let origin):
            let (changes, overflow) = subscription.outbox.takeChanges(account: account)
            sendStreamReply(to: subscription) { buffer in
                StreamReply.changes(
                    0..<Int32(changes.count), of: changes, includingOld: old, includingOrigin: origin,
                    version: changes.last?.version ?? 0, overflow: overflow, into: &buffer)
            }
        case .observe:
            let (notifications, overflow) = subscription.outbox.takeNotifications(account: account)
            sendNotifications(notifications, overflow: overflow, to: subscription)
        }
    }

    /// Delivery of `subscription` is no longer suspended: a parked one returns to the selection, and what was kept
    /// goes out as one reply, in order.
    func resumeDelivery(of subscription: Subscription) {
        guard !isSuspended(subscription) else { return }
        if parked.isParked(subscription) {
            subscription.outbox.dropped += parked.unpark(subscription)
            insert(subscription)
        }
        flush(subscription)
    }

    /// A suspended `drop` subscription that lost a tick's events leaves the selection (``ParkedSubscriptions``).
    func park(_ subscription: Subscription) {
        guard !parked.isParked(subscription), !subscription.client.connection.isClosed else { return }
        removeFromIndex(subscription)
        parked.park(subscription)
    }

    /// The events `subscription` dropped while suspended.
    func dropped(of subscription: Subscription) -> Int {
        subscription.outbox.dropped + parked.dropped(of: subscription)
    }

    /// Sends `notifications` in one reply, with `overflow`, the events lost before them.
    func sendNotifications(_ notifications: [Outbox.Notification], overflow: Int, to subscription: Subscription) {
        let sequence = notifications.last?.sequence ?? self.sequence
        sendStreamReply(to: subscription) { buffer in
            StreamReply.notifications(notifications.map(\.json), sequence: sequence, overflow: overflow, into: &buffer)
        }
    }

    /// Sends a reply of the subscription's stream. Not through the connection's call replies: a Resume sent with
    /// "oneway" on the streaming connection has its own reply discarded, not the stream's.
    private func sendStreamReply(to subscription: Subscription, _ encode: (inout [UInt8]) -> Void) {
        let connection = subscription.client.connection
        var bytes: [UInt8] = []
        encode(&bytes)
        var buffer = ByteBufferAllocator().buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        connection.send(shared: buffer)
    }

    /// The session became active or inactive: subscriptions that follow it are suspended or resumed.
    func sessionActivityChanged(_ active: Bool) {
        guard active != session.active else { return }
        session.active = active
        guard active else { return }
        for subscription in session.subscriptions.values.sorted(by: {
            $0.client.connection.id < $1.client.connection.id
        }) {
            resumeDelivery(of: subscription)
        }
    }

    /// Delivers the tick's `deliverImmediately` notifications to the parked observers they reach.
    func deliverImmediateToParked() {
        for (subscription, positions) in parked.immediateDeliveries(
            publishing.notifications, objects: publishing.objects)
        where !subscription.client.connection.isClosed {
            let notifications = positions.map { position -> Outbox.Notification in
                let event = publishing.notifications[Int(position)]
                return (event.sequence, Array(publishing.notificationBytes[event.start..<event.end]))
            }
            sendNotifications(notifications, overflow: subscription.outbox.takeOverflow(), to: subscription)
        }
    }
}
