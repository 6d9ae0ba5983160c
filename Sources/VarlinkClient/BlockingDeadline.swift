#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point in time on the monotonic clock by which a blocking operation must finish, or no limit at all.
///
/// ```swift
/// let deadline = BlockingDeadline(timeout: .seconds(2))   // nil timeout: wait for ever
/// let reply = try connection.receive(deadline: deadline)
/// ```
public struct BlockingDeadline: Sendable, Hashable {
    /// Nanoseconds on `CLOCK_MONOTONIC`; `nil` for no limit.
    public let monotonicNanoseconds: UInt64?

    /// No limit: wait for ever.
    public static let never = BlockingDeadline(monotonicNanoseconds: nil)

    /// A deadline at a monotonic clock reading in nanoseconds, or none for `nil`.
    public init(monotonicNanoseconds: UInt64?) {
        self.monotonicNanoseconds = monotonicNanoseconds
    }

    /// `timeout` from now; `nil` means no limit. A negative timeout is a deadline that has already passed.
    public init(timeout: Duration?) {
        guard let timeout else {
            self.init(monotonicNanoseconds: nil)
            return
        }
        let (seconds, attoseconds) = timeout.components
        let now = BlockingDeadline.monotonicNow()
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) {
            self.init(monotonicNanoseconds: now)
        } else if seconds >= 1 << 32 {
            self.init(monotonicNanoseconds: UInt64.max)
        } else {
            let nanoseconds = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
            self.init(monotonicNanoseconds: now + nanoseconds)
        }
    }

    /// The current reading of `CLOCK_MONOTONIC` in nanoseconds.
    public static func monotonicNow() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Whether the deadline has passed.
    public var hasPassed: Bool {
        guard let monotonicNanoseconds else { return false }
        return BlockingDeadline.monotonicNow() >= monotonicNanoseconds
    }

    /// The time left as a `poll(2)` timeout: milliseconds rounded up, `-1` for no limit, `0` once passed.
    public var pollTimeout: Int32 {
        guard let monotonicNanoseconds else { return -1 }
        let now = BlockingDeadline.monotonicNow()
        guard monotonicNanoseconds > now else { return 0 }
        let milliseconds = (monotonicNanoseconds - now + 999_999) / 1_000_000
        return milliseconds > UInt64(Int32.max) ? Int32.max : Int32(milliseconds)
    }
}
