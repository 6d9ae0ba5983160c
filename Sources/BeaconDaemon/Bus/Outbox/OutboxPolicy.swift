import BeaconProtocol

/// What becomes of a subscription's events that cannot go out now, because its delivery is suspended
/// (``DeliveryPolicy``) or its connection reads too slowly (``DaemonLimits/SlowSubscriberPolicy``). A policy only
/// chooses: the ``Outbox`` keeps, merges, counts and charges. A new policy is a type of its own.
protocol OutboxPolicy {
    /// Whether events are kept at all. When they are not, the fan-out counts a tick's notifications with
    /// ``passOver(_:in:)`` without copying them.
    var keepsNotifications: Bool { get }
    /// Whether only the latest notification of each identity (name and object) counts: the fan-out then copies
    /// only the last of each in a tick.
    var coalescesNotifications: Bool { get }

    /// Takes a change that cannot go out now.
    func keep(_ change: ChangeEvent, in outbox: inout Outbox, account: OutboxAccount) -> OutboxVerdict

    /// Takes a notification that cannot go out now; `identity` is its name and object.
    func keep(
        _ notification: Outbox.Notification, identity: () -> String, in outbox: inout Outbox, account: OutboxAccount
    ) -> OutboxVerdict

    /// Counts `count` notifications not kept (``keepsNotifications`` is false).
    func passOver(_ count: Int, in outbox: inout Outbox) -> OutboxVerdict
}

extension OutboxPolicy {
    var coalescesNotifications: Bool { false }

    /// A policy that keeps no notification counts each one as ``passOver(_:in:)`` does.
    func keep(
        _ notification: Outbox.Notification, identity: () -> String, in outbox: inout Outbox, account: OutboxAccount
    ) -> OutboxVerdict {
        passOver(1, in: &outbox)
    }
}

/// What the fan-out does after a policy took an event.
enum OutboxVerdict {
    /// The subscription goes on.
    case kept
    /// The connection is closed: the policy gives up on a subscriber that cannot keep up.
    case disconnect
}

/// The policy a Watch or Observe names for its events while delivery is suspended (`whileSuspended`): io.beacon's
/// `DeliveryPolicy`, generated from the interface.
typealias DeliveryPolicy = IOBeacon.DeliveryPolicy

extension DeliveryPolicy {
    /// The policy's type: ``DropPolicy`` (lost, and counted), ``CoalescePolicy`` (the latest of each notification
    /// name and object, or of each key), ``HoldPolicy`` (all, within `limits.maxQueuedBytes`) or
    /// ``DeliverImmediatelyPolicy`` (never suspended).
    var outboxPolicy: any OutboxPolicy {
        switch self {
        case .drop: DropPolicy()
        case .coalesce: CoalescePolicy()
        case .hold: HoldPolicy()
        case .deliverImmediately: DeliverImmediatelyPolicy()
        }
    }
}

extension DaemonLimits.SlowSubscriberPolicy {
    /// The policy's type.
    var outboxPolicy: any OutboxPolicy {
        switch self {
        case .coalesce: CoalesceWhenSlowPolicy()
        case .disconnect: DisconnectWhenSlowPolicy()
        }
    }
}
