extension SignalProtocol {
    /// Once both signals have sent a value, sends the latest value of each whenever either sends.
    ///
    /// Completes when both have completed, or at once when one completes without ever having sent
    /// a value (no pair can be made any more). The latest values are kept under a lock; the
    /// observer is called after it is released, on the thread of the signal that sent.
    @inlinable
    public func combineLatest<Other: SignalProtocol>(with other: Other) -> Signal<(Element, Other.Element)> {
        Signal { observer in
            let state = Locked(CombineLatest2State<Element, Other.Element>())
            let disposables = CompositeDisposable()
            disposables += self.observe { event in
                switch event {
                case .next(let element):
                    let pair = state.withLock { state -> (Element, Other.Element)? in
                        guard !state.done else { return nil }
                        state.first = element
                        guard let second = state.second else { return nil }
                        return (element, second)
                    }
                    if let pair { observer(.next(pair)) }
                case .completed:
                    let finish = state.withLock { state in
                        state.firstDone = true
                        return state.finish(empty: state.first == nil)
                    }
                    if finish { observer(.completed) }
                }
            }
            disposables += other.observe { event in
                switch event {
                case .next(let element):
                    let pair = state.withLock { state -> (Element, Other.Element)? in
                        guard !state.done else { return nil }
                        state.second = element
                        guard let first = state.first else { return nil }
                        return (first, element)
                    }
                    if let pair { observer(.next(pair)) }
                case .completed:
                    let finish = state.withLock { state in
                        state.secondDone = true
                        return state.finish(empty: state.second == nil)
                    }
                    if finish { observer(.completed) }
                }
            }
            return disposables
        }
    }

    /// Sends `combine(a, b)` with the latest values of both signals; see ``combineLatest(with:)``.
    public func combineLatest<Other: SignalProtocol, Result>(
        with other: Other,
        _ combine: @escaping (Element, Other.Element) -> Result
    ) -> Signal<Result> {
        combineLatest(with: other).map { combine($0.0, $0.1) }
    }

    /// The latest values of three signals; see ``combineLatest(with:)``.
    public func combineLatest<B: SignalProtocol, C: SignalProtocol>(
        with b: B,
        _ c: C
    ) -> Signal<(Element, B.Element, C.Element)> {
        combineLatest(with: b).combineLatest(with: c).map { ($0.0.0, $0.0.1, $0.1) }
    }
}

@usableFromInline
struct CombineLatest2State<A, B> {
    @usableFromInline var first: A?
    @usableFromInline var second: B?
    @usableFromInline var firstDone = false
    @usableFromInline var secondDone = false
    @usableFromInline var done = false

    @inlinable
    init() {}

    /// Whether the combined signal completes now; marks it done.
    @inlinable
    mutating func finish(empty: Bool) -> Bool {
        guard !done, empty || (firstDone && secondDone) else { return false }
        done = true
        return true
    }
}

/// Combines the latest values of several signals of the same type.
///
/// Sends an array with one value per signal (in the order of `signals`) once each has sent a
/// value, and again whenever one sends. An empty collection completes at once. Completes when all
/// have completed, or when one completes without a value.
public func combineLatest<S: SignalProtocol>(_ signals: some Collection<S>) -> Signal<[S.Element]> {
    let signals = Array(signals)
    return Signal { observer in
        guard !signals.isEmpty else {
            observer(.completed)
            return NonDisposable.instance
        }
        let state = Locked(
            CombineLatestManyState<S.Element>(
                values: Array(repeating: nil, count: signals.count), missing: signals.count))
        let disposables = CompositeDisposable()
        for (index, signal) in signals.enumerated() {
            disposables += signal.observe { event in
                switch event {
                case .next(let element):
                    let values = state.withLock { state -> [S.Element]? in
                        guard !state.done else { return nil }
                        if state.values[index] == nil { state.missing -= 1 }
                        state.values[index] = element
                        guard state.missing == 0 else { return nil }
                        return state.values.map { $0! }
                    }
                    if let values { observer(.next(values)) }
                case .completed:
                    let finish = state.withLock { state -> Bool in
                        guard !state.done else { return false }
                        state.completed += 1
                        if state.values[index] == nil || state.completed == signals.count {
                            state.done = true
                        }
                        return state.done
                    }
                    if finish { observer(.completed) }
                }
            }
        }
        return disposables
    }
}

struct CombineLatestManyState<Element> {
    var values: [Element?]
    var missing: Int
    var completed: Int = 0
    var done = false
}
