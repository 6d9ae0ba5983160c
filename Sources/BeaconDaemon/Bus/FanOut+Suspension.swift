import BeaconProtocol
import NIOCore

/// What a subscription's events become while its delivery is suspended (`policy` of Watch and Observe).
enum DeliveryPolicy: String {
    /// Lost.
    case drop
    /// The latest of each notification name and object, or of each key, kept; delivered on resume.
    case coalesce
    /// All kept, within `limits.maxQueuedBytes`, and delivered on resume; beyond it counted in `overflow`.
    case hold
    /// Never suspended.
    case deliverImmediately
}

/// Events kept for a suspended subscription, in the order they happened. Their bytes count against the uid's budget
/// (``DaemonLimits/maxBytesPerUid``) as well as the subscription's own (``DaemonLimits/maxQueuedBytes``): each
/// subscription keeps its own copies, so twenty suspended observers of one notification hold it twenty times.
struct HeldEvents {
    /// Notifications: each one's sequence and JSON; `nil` where a later one of the same name and object replaced it.
    var notifications: [(sequence: Int64, json: [UInt8])?] = []
    /// Where the latest notification of each name and object is in ``notifications`` (coalesce).
    var latestNotification: [String: Int] = [:]
    /// Changes, in version order (hold).
    var changes: [ChangeEvent] = []
    /// The latest change of each key (coalesce), `old` keeping the earliest old value.
    var latestChange: [String: ChangeEvent] = [:]
    /// Bytes of what is kept.
    var bytes = 0
    /// Events kept now.
    var count = 0
    /// Events dropped while suspended (drop), since the subscription began.
    var dropped = 0
}

extension FanOut {
    /// Whether events for `subscription` are kept rather than sent.
    @inline(__always)
    func isSuspended(_ subscription: Subscription) -> Bool {
        subscription.policy != .deliverImmediately
            && (subscription.client.suspensions > 0 || (subscription.followsSession && !sessionActive))
    }

    /// The tick's selection for a suspended subscription: kept by its policy, except notifications posted with
    /// `deliverImmediately`, which go out at once after everything kept before them.
    func keepSelection(of subscription: Subscription) {
        switch subscription.kind {
        case .watch:
            for index in subscription.selection {
                keep(publishingChanges[Int(index)], for: subscription)
            }
        case .observe:
            let hasImmediate = subscription.selection.contains { publishingNotifications[Int($0)].immediate }
            // Dropping needs no copy of anything.
            if subscription.policy == .drop && !hasImmediate {
                subscription.held.dropped += subscription.selection.count
                return
            }
            // Coalescing keeps the last of each name and object: earlier ones of the tick are not copied at all.
            var skipped = Set<Int32>()
            if subscription.policy == .coalesce && subscription.selection.count > 1 && !hasImmediate {
                var seen = Set<String>()
                for index in subscription.selection.reversed()
                where !seen.insert(identity(of: publishingNotifications[Int(index)])).inserted {
                    skipped.insert(index)
                }
            }
            var immediate: [(sequence: Int64, json: [UInt8])] = []
            publishingNotificationBytes.withUnsafeBufferPointer { bytes in
                for index in subscription.selection where !skipped.contains(index) {
                    let event = publishingNotifications[Int(index)]
                    if event.immediate {
                        immediate.append(contentsOf: takeNotifications(of: subscription))
                        immediate.append((event.sequence, Array(bytes[event.start..<event.end])))
                    } else if subscription.policy == .drop {
                        subscription.held.dropped += 1
                    } else {
                        keep(event, json: Array(bytes[event.start..<event.end]), for: subscription)
                    }
                }
            }
            if !immediate.isEmpty { sendNotifications(immediate, to: subscription) }
        }
    }

    /// What coalescing tells notifications apart by: the name, and the object when there is one.
    private func identity(of event: NotificationEvent) -> String {
        event.object >= 0 ? event.name.rawValue + "\u{0}" + publishingObjects[Int(event.object)] : event.name.rawValue
    }

    private func keep(_ event: NotificationEvent, json: [UInt8], for subscription: Subscription) {
        switch subscription.policy {
        case .drop, .deliverImmediately:
            subscription.held.dropped += 1
        case .coalesce:
            let identity = identity(of: event)
            if let earlier = subscription.held.latestNotification[identity],
                let replaced = subscription.held.notifications[earlier]
            {
                subscription.held.notifications[earlier] = nil
                subscription.held.bytes -= replaced.json.count
                subscription.held.count -= 1
                releaseHeld(replaced.json.count, of: subscription)
            }
            guard chargeHeld(json.count, to: subscription) else {
                // The uid's budget is spent: this one is lost, and counted.
                subscription.held.latestNotification[identity] = nil
                subscription.overflow += 1
                return
            }
            subscription.held.latestNotification[identity] = subscription.held.notifications.count
            append(event.sequence, json, to: subscription)
        case .hold:
            // Once a hold has lost an event, it keeps nothing more until delivery resumes: what it delivers then is
            // every event up to the first one lost, and overflow counts all that followed, so the gap is exactly
            // after the last one delivered.
            guard subscription.overflow == 0, subscription.held.bytes + json.count <= limits.maxQueuedBytes,
                chargeHeld(json.count, to: subscription)
            else {
                subscription.overflow += 1
                return
            }
            append(event.sequence, json, to: subscription)
        }
    }

    /// Charges `bytes` that `subscription` is about to keep to its uid's budget; false when the budget cannot take
    /// them (the caller then keeps nothing).
    private func chargeHeld(_ bytes: Int, to subscription: Subscription) -> Bool {
        guard let budget else { return true }
        guard budget.charge(bytes, to: subscription.client.connection.credentials.uid) else { return false }
        // Given back with the rest of the client's charges when its stream ends.
        subscription.client.chargedBytes += bytes
        return true
    }

    /// Gives back to the uid's budget `bytes` that `subscription` no longer keeps.
    private func releaseHeld(_ bytes: Int, of subscription: Subscription) {
        guard let budget, bytes > 0 else { return }
        budget.release(bytes, of: subscription.client.connection.credentials.uid)
        subscription.client.chargedBytes -= bytes
    }

    /// Keeps a notification (coalesce, hold) whose bytes are charged already, or charges them (coalesce).
    private func append(_ sequence: Int64, _ json: [UInt8], to subscription: Subscription) {
        subscription.held.notifications.append((sequence, json))
        subscription.held.bytes += json.count
        subscription.held.count += 1
    }

    private func keep(_ change: ChangeEvent, for subscription: Subscription) {
        switch subscription.policy {
        case .drop, .deliverImmediately:
            subscription.held.dropped += 1
        case .coalesce:
            if let earlier = subscription.held.latestChange[change.key.rawValue] {
                subscription.held.latestChange[change.key.rawValue] = change.coalesced(after: earlier)
            } else {
                subscription.held.latestChange[change.key.rawValue] = change
                subscription.held.count += 1
            }
        case .hold:
            let size = change.key.rawValue.utf8.count + (change.value?.count ?? 0) + 64
            // As for notifications: after the first change lost, none is kept until delivery resumes.
            guard subscription.overflow == 0, subscription.held.bytes + size <= limits.maxQueuedBytes,
                chargeHeld(size, to: subscription)
            else {
                subscription.overflow += 1
                return
            }
            subscription.held.changes.append(change)
            subscription.held.bytes += size
            subscription.held.count += 1
        }
    }

    /// Takes the kept notifications out, in order.
    private func takeNotifications(of subscription: Subscription) -> [(sequence: Int64, json: [UInt8])] {
        let kept = subscription.held.notifications.compactMap { $0 }
        subscription.held.notifications.removeAll()
        subscription.held.latestNotification.removeAll()
        releaseHeld(subscription.held.bytes, of: subscription)
        subscription.held.bytes = 0
        subscription.held.count = 0
        return kept
    }

    /// Delivery of `subscription` is no longer suspended: what was kept goes out as one reply, in order.
    func resumeDelivery(of subscription: Subscription) {
        guard !isSuspended(subscription), !subscription.client.connection.isClosed else { return }
        switch subscription.kind {
        case .watch(let old, let origin):
            var changes = subscription.held.changes
            changes.append(contentsOf: subscription.held.latestChange.values)
            changes.sort { $0.version < $1.version }
            releaseHeld(subscription.held.bytes, of: subscription)
            subscription.held = HeldEvents(dropped: subscription.held.dropped)
            let connection = subscription.client.connection
            if !connection.isWritable || !subscription.backlog.isEmpty {
                // Behind a slow reader's backlog, the kept changes join it, so that none goes out before an older
                // change of its key; the backlog is sent when the connection can take it.
                for change in changes { holdBack(change, for: subscription) }
                return
            }
            let overflow = subscription.overflow
            guard !changes.isEmpty || overflow > 0 else { return }
            subscription.overflow = 0
            let version = changes.last?.version ?? 0
            sendStreamReply(to: subscription) { buffer in
                StreamReply.changes(
                    0..<Int32(changes.count), of: changes, includingOld: old, includingOrigin: origin, version: version,
                    overflow: overflow, into: &buffer)
            }
        case .observe:
            let kept = takeNotifications(of: subscription)
            guard !kept.isEmpty || subscription.overflow > 0 else { return }
            sendNotifications(kept, to: subscription)
        }
    }

    /// Sends `notifications` in one reply, with the overflow counted so far.
    private func sendNotifications(_ notifications: [(sequence: Int64, json: [UInt8])], to subscription: Subscription) {
        let overflow = subscription.overflow
        subscription.overflow = 0
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
        guard active != sessionActive else { return }
        sessionActive = active
        guard active else { return }
        for subscription in sessionFollowers.values.sorted(by: { $0.client.connection.id < $1.client.connection.id }) {
            resumeDelivery(of: subscription)
        }
    }
}
