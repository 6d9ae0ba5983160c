// Stateless and stateful element-wise operators.
//
// Each operator returns a `Signal` that, for every observer, observes the source once and forwards
// transformed events on the thread that sent them. Disposing the returned disposable disposes the
// source observation. Completion is forwarded unchanged.

extension SignalProtocol {
    /// Sends `transform(value)` for each value.
    @inlinable
    public func map<Result>(_ transform: @escaping (Element) -> Result) -> Signal<Result> {
        Signal { observer in
            self.observe { event in
                switch event {
                case .next(let element): observer(.next(transform(element)))
                case .completed: observer(.completed)
                }
            }
        }
    }

    /// Sends the value at `keyPath` of each value.
    @inlinable
    public func map<Result>(_ keyPath: KeyPath<Element, Result>) -> Signal<Result> {
        map { $0[keyPath: keyPath] }
    }

    /// Sends `transform(value)` for each value where it is not `nil`.
    @inlinable
    public func compactMap<Result>(_ transform: @escaping (Element) -> Result?) -> Signal<Result> {
        Signal { observer in
            self.observe { event in
                switch event {
                case .next(let element):
                    if let result = transform(element) { observer(.next(result)) }
                case .completed: observer(.completed)
                }
            }
        }
    }

    /// Sends the values for which `isIncluded` returns `true`.
    @inlinable
    public func filter(_ isIncluded: @escaping (Element) -> Bool) -> Signal<Element> {
        Signal { observer in
            self.observe { event in
                switch event {
                case .next(let element):
                    if isIncluded(element) { observer(event) }
                case .completed: observer(.completed)
                }
            }
        }
    }

    /// Sends each value, ignoring the values; useful to turn any signal into a trigger.
    @inlinable
    public func eraseValues() -> Signal<Void> {
        map { _ in () }
    }

    /// Sends a value unless `isDuplicate(previous, value)` says it repeats the previous value sent.
    ///
    /// The comparison runs outside any lock. When several threads send at once, the previous value
    /// is the one last sent by whichever thread got there first.
    public func removeDuplicates(by isDuplicate: @escaping (Element, Element) -> Bool) -> Signal<Element> {
        Signal { observer in
            let last = OptimisticState<Element?>(nil)
            return self.observe { event in
                switch event {
                case .next(let element):
                    let send = last.update { previous -> (Element?, Bool) in
                        if let previous, isDuplicate(previous, element) { return (previous, false) }
                        return (element, true)
                    }
                    if send { observer(event) }
                case .completed: observer(.completed)
                }
            }
        }
    }

    /// Sends each value, accumulated with `nextPartialResult` starting from `initialResult`.
    ///
    /// `nextPartialResult` runs outside any lock; when threads race, the loser recomputes with the
    /// winner's result, so every value is counted exactly once.
    public func scan<Result>(
        _ initialResult: Result,
        _ nextPartialResult: @escaping (Result, Element) -> Result
    ) -> Signal<Result> {
        Signal { observer in
            let accumulator = OptimisticState(initialResult)
            return self.observe { event in
                switch event {
                case .next(let element):
                    let result = accumulator.update { current -> (Result, Result) in
                        let next = nextPartialResult(current, element)
                        return (next, next)
                    }
                    observer(.next(result))
                case .completed: observer(.completed)
                }
            }
        }
    }

    /// Sends the current value together with the previous one (nil for the first).
    public func zipPrevious() -> Signal<(previous: Element?, current: Element)> {
        scan((previous: Element?.none, current: Element?.none)) { pair, element in
            (pair.current, element)
        }
        .map { (previous: $0.previous, current: $0.current!) }
    }

    /// Sends the first `count` values, then completes.
    public func prefix(_ count: Int) -> Signal<Element> {
        Signal { observer in
            let serial = SerialDisposable()
            guard count > 0 else {
                observer(.completed)
                return serial
            }
            let remaining = Locked(count)
            serial.inner = self.observe { event in
                switch event {
                case .next:
                    let left = remaining.withLock { remaining -> Int in
                        guard remaining > 0 else { return -1 }
                        remaining -= 1
                        return remaining
                    }
                    guard left >= 0 else { return }
                    observer(event)
                    if left == 0 {
                        observer(.completed)
                        serial.dispose()
                    }
                case .completed:
                    if remaining.withLock({ remaining in
                        defer { remaining = 0 }
                        return remaining > 0
                    }) {
                        observer(.completed)
                    }
                }
            }
            return serial
        }
    }

    /// Drops the first `count` values, then sends the rest.
    public func dropFirst(_ count: Int = 1) -> Signal<Element> {
        Signal { observer in
            let remaining = Locked(count)
            return self.observe { event in
                if case .next = event {
                    let drop = remaining.withLock { remaining -> Bool in
                        guard remaining > 0 else { return false }
                        remaining -= 1
                        return true
                    }
                    if drop { return }
                }
                observer(event)
            }
        }
    }

    /// Calls `body` for each event before passing it on.
    public func handleEvents(_ body: @escaping (Event<Element>) -> Void) -> Signal<Element> {
        Signal { observer in
            self.observe { event in
                body(event)
                observer(event)
            }
        }
    }
}

extension SignalProtocol where Element: Equatable {
    /// Sends a value unless it equals the previous value sent.
    public func removeDuplicates() -> Signal<Element> {
        removeDuplicates(by: ==)
    }
}

/// State updated by a computation that runs outside the lock: the computation works on a copy, and
/// the result is stored only if nobody stored in between; otherwise it runs again on the new state.
final class OptimisticState<State> {
    private let storage: Locked<(state: State, version: UInt64)>

    init(_ state: State) {
        storage = Locked((state, 0))
    }

    func update<Output>(_ compute: (State) -> (State, Output)) -> Output {
        while true {
            let (state, version) = storage.withLock { ($0.state, $0.version) }
            let (newState, output) = compute(state)
            let stored = storage.withLock { storage -> Bool in
                guard storage.version == version else { return false }
                storage = (newState, version &+ 1)
                return true
            }
            if stored { return output }
        }
    }
}

extension OptimisticState: Sendable where State: Sendable {}
