/// A clock whose time moves only when ``advance(by:)`` is called: for tests of time-based
/// operators without sleeping.
///
/// Threads: any method may be called from any thread. Due actions run on the thread that calls
/// ``advance(by:)``, in order of their due time (ties in scheduling order), one at a time and
/// outside the clock's lock, so an action may schedule further actions; those that fall due within
/// the same advance run in it too.
public final class ManualClock: SignalClock {
    private struct Scheduled {
        let id: UInt64
        let due: Duration
        let action: @Sendable () -> Void
    }
    private struct State {
        var now: Duration = .zero
        var nextID: UInt64 = 0
        var scheduled: [Scheduled] = []
    }
    private let state = Locked(State())

    public init() {}

    public var now: Duration { state.withLock { $0.now } }

    /// The number of actions scheduled and not yet run or cancelled.
    public var pendingCount: Int { state.withLock { $0.scheduled.count } }

    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        let id = state.withLock { state -> UInt64 in
            let id = state.nextID
            state.nextID &+= 1
            state.scheduled.append(Scheduled(id: id, due: state.now + max(delay, .zero), action: action))
            return id
        }
        return BlockDisposable { [weak self] in
            let removed = self?.state.withLock { state -> Scheduled? in
                guard let index = state.scheduled.firstIndex(where: { $0.id == id }) else { return nil }
                return state.scheduled.remove(at: index)
            }
            _ = removed
        }
    }

    /// Moves time forward by `duration`, running each action that falls due on the way, with
    /// ``now`` set to its due time while it runs.
    public func advance(by duration: Duration) {
        let target = state.withLock { $0.now } + duration
        while let next = takeNext(upTo: target) {
            next.action()
        }
        state.withLock { state in
            if state.now < target { state.now = target }
        }
    }

    private func takeNext(upTo target: Duration) -> Scheduled? {
        state.withLock { state -> Scheduled? in
            var best: Int?
            for (index, item) in state.scheduled.enumerated() where item.due <= target {
                if let current = best {
                    let other = state.scheduled[current]
                    if item.due < other.due || (item.due == other.due && item.id < other.id) { best = index }
                } else {
                    best = index
                }
            }
            guard let best else { return nil }
            let item = state.scheduled.remove(at: best)
            if state.now < item.due { state.now = item.due }
            return item
        }
    }
}
