extension SignalProtocol {
    /// Pairs the n-th value of this signal with the n-th value of `other`.
    ///
    /// Values that wait for their partner are buffered, at most `bufferLimit` per side; when a side
    /// exceeds it, its oldest waiting value is dropped. Completes when either side has completed
    /// and has no value left waiting.
    public func zip<Other: SignalProtocol>(
        with other: Other,
        bufferLimit: Int = 1024
    ) -> Signal<(Element, Other.Element)> {
        Signal { observer in
            let state = Locked(ZipState<Element, Other.Element>())
            let disposables = CompositeDisposable()
            let deliver = { (pair: (Element, Other.Element)?, finish: Bool) in
                if let pair { observer(.next(pair)) }
                if finish {
                    observer(.completed)
                    disposables.dispose()
                }
            }
            disposables += self.observe { event in
                let result = state.withLock { state -> ((Element, Other.Element)?, Bool) in
                    guard !state.done else { return (nil, false) }
                    switch event {
                    case .next(let element):
                        state.first.append(element)
                        if state.first.count > bufferLimit { state.first.removeFirst() }
                    case .completed:
                        state.firstDone = true
                    }
                    let pair = state.take()
                    return (pair, state.checkFinish())
                }
                deliver(result.0, result.1)
            }
            disposables += other.observe { event in
                let result = state.withLock { state -> ((Element, Other.Element)?, Bool) in
                    guard !state.done else { return (nil, false) }
                    switch event {
                    case .next(let element):
                        state.second.append(element)
                        if state.second.count > bufferLimit { state.second.removeFirst() }
                    case .completed:
                        state.secondDone = true
                    }
                    let pair = state.take()
                    return (pair, state.checkFinish())
                }
                deliver(result.0, result.1)
            }
            return disposables
        }
    }
}

struct ZipState<First, Second> {
    var first: [First] = []
    var second: [Second] = []
    var firstDone = false
    var secondDone = false
    var done = false

    mutating func take() -> (First, Second)? {
        guard !first.isEmpty, !second.isEmpty else { return nil }
        return (first.removeFirst(), second.removeFirst())
    }

    mutating func checkFinish() -> Bool {
        guard !done else { return false }
        if (firstDone && first.isEmpty) || (secondDone && second.isEmpty) {
            done = true
            return true
        }
        return false
    }
}
