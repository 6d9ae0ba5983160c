extension SignalProtocol {
    /// Sends the values of this signal and of `other` as they come; completes when both have.
    public func merge<Other: SignalProtocol>(with other: Other) -> Signal<Element> where Other.Element == Element {
        Signals.merge([self.toSignal(), other.toSignal()])
    }

    /// For each value, observes the signal `transform` returns and sends its values, dropping the
    /// previous inner signal; completes when this signal and the current inner signal have completed.
    ///
    /// Values that a replaced inner signal sends after the switch are not forwarded.
    public func flatMapLatest<Inner: SignalProtocol>(
        _ transform: @escaping (Element) -> Inner
    ) -> Signal<Inner.Element> {
        Signal { observer in
            let state = Locked(FlatMapLatestState())
            let inner = SerialDisposable()
            let outer = SerialDisposable()
            let disposables = CompositeDisposable([inner, outer])
            outer.inner = self.observe { event in
                switch event {
                case .next(let element):
                    let generation = state.withLock { state -> UInt64? in
                        guard !state.done else { return nil }
                        state.generation &+= 1
                        state.innerDone = false
                        return state.generation
                    }
                    guard let generation else { return }
                    inner.inner = nil
                    let signal = transform(element)
                    inner.inner = signal.observe { innerEvent in
                        switch innerEvent {
                        case .next:
                            let current = state.withLock { !$0.done && $0.generation == generation }
                            if current { observer(innerEvent) }
                        case .completed:
                            let finish = state.withLock { state -> Bool in
                                guard !state.done, state.generation == generation else { return false }
                                state.innerDone = true
                                state.done = state.outerDone
                                return state.done
                            }
                            if finish { observer(.completed) }
                        }
                    }
                case .completed:
                    let finish = state.withLock { state -> Bool in
                        guard !state.done else { return false }
                        state.outerDone = true
                        state.done = state.innerDone
                        return state.done
                    }
                    if finish { observer(.completed) }
                }
            }
            return disposables
        }
    }
}

/// Sends the values of all `signals` as they come; completes when all have completed (an empty
/// collection completes at once).
public func merge<S: SignalProtocol>(_ signals: some Collection<S>) -> Signal<S.Element> {
    let signals = Array(signals)
    return Signal { observer in
        guard !signals.isEmpty else {
            observer(.completed)
            return NonDisposable.instance
        }
        let remaining = Locked(signals.count)
        let disposables = CompositeDisposable()
        for signal in signals {
            disposables += signal.observe { event in
                switch event {
                case .next: observer(event)
                case .completed:
                    let last = remaining.withLock { remaining -> Bool in
                        remaining -= 1
                        return remaining == 0
                    }
                    if last { observer(.completed) }
                }
            }
        }
        return disposables
    }
}

struct FlatMapLatestState {
    var generation: UInt64 = 0
    var outerDone = false
    var innerDone = true
    var done = false
}
