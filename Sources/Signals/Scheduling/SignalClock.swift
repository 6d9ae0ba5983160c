/// A source of time for the time-based operators (``SignalProtocol/debounce(for:clock:)``,
/// ``SignalProtocol/throttle(for:clock:latest:)``).
///
/// Inject ``DispatchQueueClock`` in production and ``ManualClock`` in tests, where time moves only
/// when the test advances it.
public protocol SignalClock: Sendable {
    /// The time elapsed since a fixed point chosen by the clock; it never goes backwards.
    var now: Duration { get }

    /// Runs `action` once, `delay` after now, unless the returned disposable is disposed first.
    ///
    /// The action runs on a thread of the clock's choosing, never inside the call to `schedule`.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable
}
