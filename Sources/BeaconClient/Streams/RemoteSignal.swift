import Signals

/// A signal of events from the daemon whose observations can be awaited until they are live.
///
/// It is a plain signal (`observeNext`, `~>`, `<~`, every operator): each observation runs its own stream on the
/// daemon. ``observeLive(with:)`` and ``observeNextLive(with:)`` also return only once the daemon has registered
/// the observation, so that every event after they return is delivered:
///
/// ```swift
/// let saved = try await client.notifications("app.saved").observeNextLive { note in reload() }
/// try await client.post("app.saved")              // reaches the observer above
/// ```
///
/// ``map(_:)`` and ``compactMap(_:)`` keep the ability; other operators give plain signals.
public struct RemoteSignal<Element: Sendable>: LiveObservable, Sendable {
    /// Starts an observation; `live` is called once, when the daemon has registered it (`nil`) or refused it.
    let start:
        @Sendable (
            _ observer: @escaping (Event<Element>) -> Void, _ live: @escaping @Sendable (BeaconError?) -> Void
        ) -> any Disposable

    @discardableResult
    public func observe(with observer: @escaping (Event<Element>) -> Void) -> any Disposable {
        start(observer, { _ in })
    }

    /// Observes, and returns once the daemon has registered the observation. Throws the daemon's refusal (an
    /// invalid pattern, say) or ``BeaconError/Code/cancelled``; nothing stays observed then.
    @discardableResult
    public func observeLive(with observer: @escaping (Event<Element>) -> Void) async throws(BeaconError)
        -> any Disposable
    {
        let live = OneShot<BeaconError?>()
        let disposable = start(observer) { live.fulfill($0) }
        try await live.awaitLive(disposingOnFailure: disposable)
        return disposable
    }

    /// The elements transformed, keeping the observation awaitable.
    public func map<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T) -> RemoteSignal<T> {
        // `T?` spelled out: a `T` that is itself optional is delivered when it is `nil`, not dropped.
        compactMap { element -> T? in transform(element) }
    }

    /// The elements transformed, without those `transform` turns into `nil`, keeping the observation awaitable.
    public func compactMap<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T?) -> RemoteSignal<T> {
        let start = self.start
        return RemoteSignal<T> { observer, live in
            start(
                { event in
                    switch event {
                    case .next(let element):
                        if let mapped = transform(element) { observer(.next(mapped)) }
                    case .completed: observer(.completed)
                    }
                }, live)
        }
    }
}

/// A signal whose observations can be awaited until they are live: ``RemoteSignal`` and ``RemoteProperty``.
public protocol LiveObservable<Element>: SignalProtocol {
    /// Observes, and returns once the observation is live: every event after it returns is delivered.
    @discardableResult
    func observeLive(with observer: @escaping (Event<Element>) -> Void) async throws(BeaconError) -> any Disposable
}

extension LiveObservable {
    /// ``observeLive(with:)`` for values only.
    @discardableResult
    public func observeNextLive(with observer: @escaping (Element) -> Void) async throws(BeaconError)
        -> any Disposable
    {
        try await observeLive { event in
            if case .next(let element) = event { observer(element) }
        }
    }
}

extension OneShot where Value == BeaconError? {
    /// Waits until the observation is live (`nil`) or failed; on failure or cancellation disposes `observation` and
    /// throws.
    func awaitLive(disposingOnFailure observation: any Disposable) async throws(BeaconError) {
        let failure = await withTaskCancellationHandler {
            await value
        } onCancel: {
            fulfill(.cancelled)
        }
        if let failure {
            observation.dispose()
            throw failure
        }
    }
}
