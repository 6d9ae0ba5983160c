import Dispatch

/// A real clock that runs scheduled actions on a `DispatchQueue`.
///
/// ``now`` is the monotonic uptime of the machine. Actions run on ``queue``; a serial queue runs
/// them in due order.
public struct DispatchQueueClock: SignalClock {
    /// The queue actions run on.
    public let queue: DispatchQueue

    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    public var now: Duration {
        .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }

    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        let item = DispatchWorkItem(block: action)
        let (seconds, attoseconds) = max(delay, .zero).components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), execute: item)
        return BlockDisposable { item.cancel() }
    }
}
