import BeaconProtocol

/// Bounds on every client-controlled resource. Reloaded on SIGHUP.
public struct DaemonLimits: Sendable, Hashable {
    /// What happens to a subscriber whose queued output exceeds ``maxQueuedBytes``.
    public enum SlowSubscriberPolicy: String, Sendable, Hashable {
        /// Property changes are coalesced to the latest value per key, notifications are dropped and counted.
        case coalesce
        /// The connection is closed.
        case disconnect
    }

    /// The largest message a client may send, in bytes (without the NUL).
    public var maxMessageSize: Int = 1 << 20
    /// The deepest JSON nesting accepted in a message.
    public var maxJSONDepth: Int = 64
    /// The longest key, notification name or pattern, in bytes.
    public var maxKeyLength: Int = 256
    /// The most segments in a key, name or pattern.
    public var maxKeyDepth: Int = 16
    /// The largest property value or notification userInfo, in bytes of compact JSON.
    public var maxValueSize: Int = 64 << 10
    /// The most patterns a connection may watch or observe.
    public var maxPatterns: Int = 256
    /// Output queued for a connection beyond which it counts as slow, in bytes.
    public var maxQueuedBytes: Int = 4 << 20
    /// The most connections one uid may hold at the same time.
    public var maxConnectionsPerUid: Int = 16384
    public var slowSubscriber: SlowSubscriberPolicy = .coalesce
    /// The most memory one uid's connections may hold in unfinished messages and subscriptions, in bytes.
    public var maxBytesPerUid: Int = 64 << 20
    /// How long a message may stay unfinished before its connection is closed, in milliseconds.
    public var frameTimeoutMs: Int = 30_000

    public init() {}

    var jsonLimits: JSONLimits { JSONLimits(maxDepth: maxJSONDepth, maxBytes: maxMessageSize) }
    var keyLimits: KeyLimits { KeyLimits(maxLength: maxKeyLength, maxDepth: maxKeyDepth) }
}
