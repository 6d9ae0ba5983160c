import BeaconProtocol
import Signals

extension BeaconClient {
    /// What an observation's events become while its delivery is suspended, as with
    /// `DistributedNotificationCenter.SuspensionBehavior`.
    /// `drop` (lost), `coalesce` (the latest of each notification name and object, of each key for a watch, is
    /// kept and delivered on resume), `hold` (everything is kept, within the daemon's queue limit, and delivered on
    /// resume in order) or `deliverImmediately` (never suspended): io.beacon's `DeliveryPolicy`, generated from
    /// the interface.
    public typealias SuspensionBehavior = IOBeacon.DeliveryPolicy

    /// Suspends the delivery of every observation of this client (and of those it starts while suspended), like
    /// `DistributedNotificationCenter.suspended = true` or `notify_suspend`. Calls nest: delivery resumes when each
    /// one has had its ``resume()``. While suspended, each observation's ``SuspensionBehavior`` decides what its
    /// events become; notifications posted with `deliverImmediately` still arrive, after what was kept.
    public func suspend() {
        // Sent under the lock (sendOneway hands the write to the connection's event loop and takes no lock of the
        // client): a concurrent resume(), or a stream connection being opened, cannot get its call out first.
        streams.withLock { streams in
            streams.suspensions += 1
            guard streams.suspensions == 1 else { return }
            for connection in streams.connections.values { connection.sendOneway(Method.suspend, [:]) }
        }
    }

    /// Takes back one ``suspend()``; the last one has the daemon deliver what was kept, at once and in order.
    public func resume() {
        streams.withLock { streams in
            guard streams.suspensions > 0 else { return }
            streams.suspensions -= 1
            guard streams.suspensions == 0 else { return }
            for connection in streams.connections.values { connection.sendOneway(Method.resume, [:]) }
        }
    }

    /// Whether ``suspend()`` calls are pending.
    public var isSuspended: Bool { streams.withLock { $0.suspensions > 0 } }

    /// The notifications whose name matches any of `patterns`, posted with `object` when it is given, and kept or
    /// lost as `behavior` says while delivery is suspended (by ``suspend()``, or by the session when
    /// ``Options/suspendsWhileSessionInactive`` is set). See ``notifications(_:)``.
    ///
    /// ```swift
    /// client.notifications(matching: ["mail.**"], object: "inbox", whileSuspended: .coalesce)
    /// ```
    public func notifications(
        matching patterns: [String], object: String? = nil, whileSuspended behavior: SuspensionBehavior
    ) -> RemoteSignal<BeaconNotification> {
        notifications(NotificationObservation(patterns: patterns, object: object, behavior: behavior))
    }
}
