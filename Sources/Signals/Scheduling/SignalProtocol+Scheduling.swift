extension SignalProtocol {
    /// Delivers every event in `context`, in the order the context runs them.
    ///
    /// After the returned disposable is disposed, events already handed to the context and not yet
    /// run are dropped.
    public func receive(on context: ExecutionContext) -> Signal<Element> {
        guard !context.isImmediate else { return toSignal() }
        return Signal { observer in
            let serial = SerialDisposable()
            let target = UncheckedSendable(observer)
            serial.inner = self.observe { event in
                let event = UncheckedSendable(event)
                context.execute {
                    if !serial.isDisposed { target.value(event.value) }
                }
            }
            return serial
        }
    }
}

extension SignalProtocol where Element: Sendable {
    /// Sends a value once `dueTime` has passed without a newer one; each new value restarts the wait.
    ///
    /// The value is sent on the clock's thread (so it must be `Sendable`). On completion a value
    /// still waiting is sent first.
    public func debounce(for dueTime: Duration, clock: some SignalClock) -> Signal<Element> {
        Signal { observer in
            let state = Locked(DebounceState<Element>())
            let timer = SerialDisposable()
            let disposables = CompositeDisposable([timer])
            let target = UncheckedSendable(observer)
            disposables += self.observe { event in
                switch event {
                case .next(let element):
                    let generation = state.withLock { state -> UInt64? in
                        guard !state.done else { return nil }
                        state.pending = element
                        state.generation &+= 1
                        return state.generation
                    }
                    guard let generation else { return }
                    timer.inner = clock.schedule(after: dueTime) {
                        let value = state.withLock { state -> Element? in
                            guard !state.done, state.generation == generation, let pending = state.pending
                            else { return nil }
                            state.pending = nil
                            return pending
                        }
                        if let value { target.value(.next(value)) }
                    }
                case .completed:
                    let (pending, finish) = state.finish()
                    timer.dispose()
                    if let pending { observer(.next(pending)) }
                    if finish { observer(.completed) }
                }
            }
            return disposables
        }
    }

    /// Sends at most one value per `interval`: a value that arrives when nothing was sent during the
    /// last `interval` goes out at once; later ones wait for the end of the interval, and then the
    /// latest (`latest: true`) or the first (`latest: false`) of them is sent, on the clock's thread
    /// (so values must be `Sendable`).
    ///
    /// On completion a value still waiting is sent first.
    public func throttle(for interval: Duration, clock: some SignalClock, latest: Bool = true) -> Signal<Element> {
        Signal { observer in
            let state = Locked(ThrottleState<Element>())
            let timer = SerialDisposable()
            let disposables = CompositeDisposable([timer])
            let target = UncheckedSendable(observer)
            disposables += self.observe { event in
                switch event {
                case .next(let element):
                    let now = clock.now
                    let action = state.withLock { state -> ThrottleAction in
                        guard !state.done else { return .none }
                        if state.timerScheduled {
                            if latest || state.pending == nil { state.pending = element }
                            return .none
                        }
                        if let lastSent = state.lastSent, now - lastSent < interval {
                            state.pending = element
                            state.timerScheduled = true
                            return .schedule(interval - (now - lastSent))
                        }
                        state.lastSent = now
                        return .send
                    }
                    switch action {
                    case .send: observer(.next(element))
                    case .schedule(let delay):
                        timer.inner = clock.schedule(after: delay) {
                            let firedAt = clock.now
                            let value = state.withLock { state -> Element? in
                                state.timerScheduled = false
                                guard !state.done, let pending = state.pending else { return nil }
                                state.pending = nil
                                state.lastSent = firedAt
                                return pending
                            }
                            if let value { target.value(.next(value)) }
                        }
                    case .none: break
                    }
                case .completed:
                    let (pending, finish) = state.finish()
                    timer.dispose()
                    if let pending { observer(.next(pending)) }
                    if finish { observer(.completed) }
                }
            }
            return disposables
        }
    }
}

/// The state of an operator that holds back at most one value until its timer fires.
protocol HeldValueState {
    associatedtype Element
    var pending: Element? { get set }
    var done: Bool { get set }
}

extension Locked where State: HeldValueState {
    /// Marks the operator done on completion: returns the value still held back, and whether the completion is
    /// still to be sent (`false` when the operator was already done).
    func finish() -> (State.Element?, Bool) {
        withLock { state in
            guard !state.done else { return (nil, false) }
            state.done = true
            defer { state.pending = nil }
            return (state.pending, true)
        }
    }
}

struct DebounceState<Element>: HeldValueState {
    var pending: Element?
    var generation: UInt64 = 0
    var done = false
}

extension DebounceState: Sendable where Element: Sendable {}

struct ThrottleState<Element>: HeldValueState {
    var lastSent: Duration?
    var pending: Element?
    var timerScheduled = false
    var done = false
}

extension ThrottleState: Sendable where Element: Sendable {}

enum ThrottleAction {
    case send
    case schedule(Duration)
    case none
}
