import BeaconProtocol
import Signals
import Synchronization

extension BeaconClient {
    /// The notifications whose name matches any of `patterns`, as a signal.
    ///
    /// Each observation runs its own `Observe` stream, resumed after a reconnection (notifications posted while
    /// the daemon was unreachable are lost: nothing is stored); disposing the observation ends the stream on the
    /// daemon's side. A pattern the daemon refuses is reported on ``errors`` and completes the signal.
    ///
    /// ```swift
    /// client.notifications("app.**").observeNext { note in print(note.name) }
    /// ```
    public func notifications(_ patterns: String...) -> RemoteSignal<BeaconNotification> {
        notifications(matching: patterns)
    }

    /// The notifications whose name matches any of `patterns`; see ``notifications(_:)``.
    public func notifications(matching patterns: [String]) -> RemoteSignal<BeaconNotification> {
        notifications(NotificationObservation(patterns: patterns))
    }

    /// The signal of one kind of observation.
    func notifications(_ observation: NotificationObservation) -> RemoteSignal<BeaconNotification> {
        RemoteSignal { observer, live in
            let target = UncheckedBox(observer)
            let subscription = SerialDisposable()
            let task = Task {
                let error = await observation.run(on: self, subscribed: { live(nil) }) { note in
                    if !subscription.isDisposed { target.value(.next(note)) }
                }
                live(error ?? .cancelled)
                if let error, !subscription.isDisposed {
                    if error.code != .clientClosed { self.report(error) }
                    target.value(.completed)
                }
            }
            subscription.inner = BlockDisposable { task.cancel() }
            return subscription
        }
    }

    /// The notifications whose name matches any of `patterns`, as an `AsyncSequence`; returns once the daemon
    /// has registered the observation, so every notification posted after the call returns is delivered.
    ///
    /// Throws the daemon's refusal (``BeaconError/Code/invalidPattern``) or ``BeaconError/Code/notConnected``.
    /// The sequence continues across reconnections and ends when the iteration ends.
    public func observeNotifications(
        _ patterns: [String]
    ) async throws(BeaconError) -> AsyncThrowingStream<BeaconNotification, any Error> {
        let (output, continuation) = AsyncThrowingStream.makeStream(of: BeaconNotification.self)
        let ready = OneShot<BeaconError?>()
        let observation = NotificationObservation(patterns: patterns)
        let task = Task {
            let error = await observation.run(
                on: self, subscribed: { ready.fulfill(nil) },
                deliver: { note in continuation.yield(note) })
            ready.fulfill(error ?? .cancelled)
            continuation.finish(throwing: error)
        }
        continuation.onTermination = { _ in task.cancel() }
        try await ready.awaitLive(
            disposingOnFailure: BlockDisposable {
                task.cancel()
                continuation.finish()
            })
        return output
    }

    /// Posts the notification `name` without waiting for the daemon's answer, after every post this client's
    /// posters made before it; a failure is reported on ``errors``.
    public func send(
        _ name: String, userInfo: JSONValue? = nil, object: String? = nil, deliverImmediately: Bool = false
    ) {
        posts.enqueue { () throws(BeaconError) in
            try await self.post(name, userInfo: userInfo, object: object, deliverImmediately: deliverImmediately)
        }
    }

    /// A binding target that posts the notification `name`, without `userInfo`, for every value:
    /// `button.reactive.tap ~> client.poster("app.refresh")`.
    ///
    /// The posts of every poster of this client are sent in the order they are made; failures are reported on
    /// ``errors``. `object` and `deliverImmediately` go with each post, as with `post`.
    public func poster(
        _ name: String, object: String? = nil, deliverImmediately: Bool = false
    ) -> NotificationPoster<Void> {
        NotificationPoster(client: self, name: name, object: object, deliverImmediately: deliverImmediately) {
            _ throws(BeaconError) in nil
        }
    }

    /// A binding target that posts the notification `name` with each value as its `userInfo`; see
    /// ``poster(_:object:deliverImmediately:)``.
    public func poster<T: Encodable & Sendable>(
        _ name: String, userInfo type: T.Type, object: String? = nil, deliverImmediately: Bool = false
    ) -> NotificationPoster<T> {
        NotificationPoster(client: self, name: name, object: object, deliverImmediately: deliverImmediately) {
            (value) throws(BeaconError) in
            try ValueCoding.encode(value, key: name)
        }
    }
}

/// Posts a notification for every value of the signals bound to it (see
/// ``BeaconClient/poster(_:object:deliverImmediately:)``).
public final class NotificationPoster<Element>: BindableProtocol, Sendable {
    /// The name posted.
    public let name: String
    private let client: BeaconClient
    private let object: String?
    private let deliverImmediately: Bool
    private let userInfo: @Sendable (Element) throws(BeaconError) -> JSONValue?

    init(
        client: BeaconClient,
        name: String,
        object: String? = nil,
        deliverImmediately: Bool = false,
        userInfo: @escaping @Sendable (Element) throws(BeaconError) -> JSONValue?
    ) {
        self.client = client
        self.name = name
        self.object = object
        self.deliverImmediately = deliverImmediately
        self.userInfo = userInfo
    }

    /// Posts the notification with the userInfo of `value`.
    public func post(_ value: Element) {
        let info: JSONValue?
        do throws(BeaconError) {
            info = try userInfo(value)
        } catch {
            client.report(error)
            return
        }
        let client = self.client
        let name = self.name
        let object = self.object
        let deliverImmediately = self.deliverImmediately
        client.posts.enqueue { () throws(BeaconError) in
            try await client.post(name, userInfo: info, object: object, deliverImmediately: deliverImmediately)
        }
    }

    @discardableResult
    public func bind(signal: Signal<Element>) -> any Disposable {
        let binding = SerialDisposable()
        binding.inner = signal.observe { event in
            switch event {
            case .next(let value): self.post(value)
            case .completed: binding.dispose()
            }
        }
        return binding
    }
}

/// A value set once and awaited by one task.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var done = false
        var waiter: CheckedContinuation<Value, Never>?
    }
    private let state = Mutex(State())

    /// Sets the value; later calls are ignored.
    func fulfill(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard !state.done else { return nil }
            state.done = true
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Value? in
                    if state.done { return state.value }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
