import Synchronization

extension SignalProtocol {
    /// Sends the values of this signal until `trigger` sends its first value, then completes and
    /// stops observing both. A completion of `trigger` without a value does not end this signal.
    ///
    /// If `trigger` has already sent a value by the time it is observed (a ``Property``, for
    /// example), the result completes at once.
    public func take<Trigger: SignalProtocol>(until trigger: Trigger) -> Signal<Element> {
        Signal { observer in
            let done = Atomic<Bool>(false)
            let disposables = CompositeDisposable()
            let finish = {
                guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
                disposables.dispose()
                observer(.completed)
            }
            disposables += trigger.observe { event in
                if case .next = event { finish() }
            }
            guard !done.load(ordering: .acquiring) else { return disposables }
            disposables += self.observe { event in
                switch event {
                case .next:
                    if !done.load(ordering: .acquiring) { observer(event) }
                case .completed:
                    finish()
                }
            }
            return disposables
        }
    }

    /// The same as ``take(until:)``, under the name Combine uses.
    public func prefix<Trigger: SignalProtocol>(untilOutputFrom trigger: Trigger) -> Signal<Element> {
        take(until: trigger)
    }
}
