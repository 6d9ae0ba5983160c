extension BeaconClient {
    /// How a client connects and reconnects.
    public struct Options: Sendable {
        /// The largest reply accepted, in bytes. Replies to `List` of a large store can be big.
        public var maxMessageSize: Int
        /// The pause before each reconnection attempt after the daemon went away.
        public var reconnect: ReconnectPolicy
        /// Suspends the delivery of this client's notification observations and property watches while the
        /// user's session is not active (locked, switched away, asleep), as AppKit does for an inactive app. Each
        /// observation's ``BeaconClient/SuspensionBehavior`` decides what happens to its events meanwhile:
        /// notifications are held by default, remote properties and watches coalesce per key (their latest value
        /// arrives on resume), and the lifecycle signals are never suspended.
        public var suspendsWhileSessionInactive: Bool
        /// How long ``BeaconClient/connect(to:options:)`` waits for a daemon that is not answering yet (one that
        /// is starting, or whose socket is not there yet), trying again with the ``reconnect`` backoff. Zero makes
        /// a single attempt.
        public var connectTimeout: Duration

        /// The options, each one's default given here only: `Options()` is the defaults.
        public init(
            maxMessageSize: Int = 64 << 20,
            reconnect: ReconnectPolicy = ReconnectPolicy(),
            suspendsWhileSessionInactive: Bool = false,
            connectTimeout: Duration = .seconds(5)
        ) {
            self.maxMessageSize = maxMessageSize
            self.reconnect = reconnect
            self.suspendsWhileSessionInactive = suspendsWhileSessionInactive
            self.connectTimeout = connectTimeout
        }
    }

    /// Exponential backoff between reconnection attempts: `initialDelay`, then multiplied by `multiplier` after
    /// each failed attempt, up to `maximumDelay`.
    public struct ReconnectPolicy: Sendable, Hashable {
        public var initialDelay: Duration
        public var maximumDelay: Duration
        public var multiplier: Double

        public init(
            initialDelay: Duration = .milliseconds(50),
            maximumDelay: Duration = .seconds(2),
            multiplier: Double = 2
        ) {
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
            self.multiplier = max(1, multiplier)
        }

        /// The pause before attempt number `attempt` (0 for the first attempt after a loss).
        public func delay(forAttempt attempt: Int) -> Duration {
            var delay = initialDelay
            var remaining = attempt
            while remaining > 0 && delay < maximumDelay {
                delay = delay * multiplier
                remaining -= 1
            }
            return min(delay, maximumDelay)
        }
    }

    /// Whether the client is connected to the daemon.
    public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
        /// The first connection is being made.
        case connecting
        /// The command connection is open.
        case connected
        /// The daemon went away; the client is reconnecting with backoff. Calls fail with
        /// ``BeaconError/Code/notConnected`` unless a connection attempt they make succeeds; streams resume by
        /// themselves.
        case disconnected
        /// ``BeaconClient/close()`` was called.
        case closed

        public var description: String {
            switch self {
            case .connecting: "connecting"
            case .connected: "connected"
            case .disconnected: "disconnected"
            case .closed: "closed"
            }
        }
    }
}
