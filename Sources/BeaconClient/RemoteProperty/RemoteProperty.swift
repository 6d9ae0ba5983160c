import BeaconProtocol
import Signals
import Synchronization

/// The state of a remote key as a watch last reported it.
struct RemoteSnapshot: Sendable, Hashable {
    /// The value; `nil` when the key does not exist.
    var json: JSONValue?
    /// The version a compare-and-set must name to replace this state: the value's version, 0 for a missing key.
    var keyVersion: Int64
    /// The version at which this state was observed: the change's version, or the watch's version for the
    /// initial state of a missing key. Later states of an ``epoch`` have larger ones.
    var version: Int64
    /// How many times, while the watch ran, the daemon's versions started again below the ones seen before (its
    /// store was replaced): a state of a later epoch is newer, whatever its version.
    var epoch = 0

    /// Whether this state comes after `other`.
    func isNewer(than other: RemoteSnapshot) -> Bool {
        epoch == other.epoch ? version > other.version : epoch > other.epoch
    }
}

/// A property stored in the daemon, observable like a ``Signals/Property``: each observer gets the current value
/// first, then every change, and values bound to it with `<~` are written to the daemon.
///
/// ```swift
/// let name = client.property("user.name", as: String.self, default: "")
/// label.reactive.text <~ name                       // the current name, then every change
/// name <~ textField.reactive.text                   // every edit is written (Set)
/// name.bidirectionalBind(to: model.name)            // both ways, compare-and-set
/// for try await value in name.updates { ... }       // as an AsyncSequence
/// ```
///
/// **A missing key.** ``BeaconClient/property(_:as:default:)`` gives a `RemoteProperty<Value>` whose observers get
/// the default value while the key does not exist; ``BeaconClient/property(_:as:)`` gives a
/// `RemoteProperty<Value?>` whose observers get `nil` then, and writing `nil` deletes the key (Unset).
///
/// **Watching.** The property watches its key while it has at least one observer (bindings and
/// ``updates`` iterations count): the first observer opens a `Watch` stream on a connection of its own, the last
/// one to go closes it. Across a restart of the daemon the watch resumes with `since` the last version seen, so
/// observers miss no change. Until the first reply has arrived observers get nothing; after that a new observer
/// gets the latest value at once.
///
/// **Threads.** Observers are called one value at a time, in version order (which starts again when the daemon's
/// store is replaced: its versions are then lower than before), with no thread switch of their own:
/// a change reaches them on the client's event-loop thread that read it, and a new observer gets the latest value
/// on the thread that registers it. Observers must not block. Bind user-interface objects through a
/// ``Signals/BindingTarget`` with the `.mainActor` context, or `receive(on:)`.
///
/// **Errors.** A stored value that does not decode as `Value` is not delivered: it is reported on ``errors`` (and
/// ``BeaconClient/errors``) as ``BeaconError/Code/decodingFailed``, and ``updates`` throws it. Failed writes and
/// compare-and-set conflicts are reported on ``errors`` too.
public final class RemoteProperty<Value: Sendable>: SignalProtocol, BindingOwner, Sendable {
    public typealias Element = Value

    typealias Delivery = RemoteDelivery

    /// The key this property reflects.
    public let key: String
    /// The client it belongs to.
    public let client: BeaconClient
    /// Holds bindings into this property; disposed when it is deallocated.
    public let bag = DisposeBag()

    let decodeValue: @Sendable (JSONValue?, Int64) throws(BeaconError) -> Value
    let encodeValue: @Sendable (Value) throws(BeaconError) -> JSONValue?
    /// Where observers are called and every delivery is ordered. It has no thread: work runs on the thread that
    /// hands it over when nothing else runs (for deliveries, the watch connection's event loop).
    let queue = InlineSerialQueue<RemotePropertyWork>()
    private let state = Mutex(RemotePropertyState())
    private let deliveries = PassthroughSubject<Delivery>()
    private let errorSubject = PassthroughSubject<BeaconError>()
    private let keyError: BeaconError?
    let writes: SerialCallQueue

    init(
        client: BeaconClient,
        key: String,
        decode: @escaping @Sendable (JSONValue?, Int64) throws(BeaconError) -> Value,
        encode: @escaping @Sendable (Value) throws(BeaconError) -> JSONValue?
    ) {
        self.client = client
        self.key = key
        self.decodeValue = decode
        self.encodeValue = encode
        do {
            _ = try PropertyKey(key)
            keyError = nil
        } catch {
            keyError = BeaconError(
                code: .invalidKey, name: IOBeaconProperties.InvalidKey.name,
                parameters: ["key": .string(key), "reason": .string(error.reason)],
                message: "\"\(key)\" is not a valid key: \(error.reason)")
        }
        let errors = errorSubject
        writes = SerialCallQueue { error in
            errors.send(error)
            client.report(error)
        }
    }

    deinit {
        writes.finish()
    }

    // MARK: Reading

    /// The latest value a watch delivered, or `nil` while the property is not watched or before the first reply.
    /// ``keepLive()`` keeps it watched without an observer; ``current()`` answers whether it is watched or not.
    public var latestValue: Value? {
        state.withLock { state -> Value? in
            guard state.latest != nil, let lastGood = state.lastGood else { return Optional<Value>.none }
            return .some(lastGood as! Value)
        }
    }

    /// The version of the latest state delivered (the value's version, or the deletion's), `nil` like
    /// ``latestValue``. It grows with every change, and is lower than before only after the daemon's versions went
    /// back (its state directory was removed).
    public var latestVersion: Int64? {
        state.withLock { $0.latest?.snapshot.version }
    }

    /// Reads the current value from the daemon (a `Get`), without watching.
    public func load() async throws(BeaconError) -> Value {
        do {
            let property = try await client.get(key)
            return try decodeValue(property.value, property.version)
        } catch  where error.code == .keyNotFound {
            return try decodeValue(nil, 0)
        }
    }

    /// Sends the current value (once known) and every change to `observer`, on the property's queue.
    ///
    /// Inlinable: an observer made where `Value` is known (a `<~` binding, say) takes each value in code specialized
    /// for it, with no look-up of `Event<Value>`'s metadata per change.
    @discardableResult
    @inlinable
    public func observe(with observer: @escaping (Event<Value>) -> Void) -> any Disposable {
        observeDeliveries { event in
            switch event {
            case .next(let delivery):
                if let value = delivery.value(as: Value.self) { observer(.next(value)) }
            case .completed:
                observer(.completed)
            }
        }
    }

    /// Errors concerning this property: values that do not decode, writes that failed, compare-and-set
    /// conflicts of ``bidirectionalBind(to:)``, and a watch the daemon refused.
    public var errors: Signal<BeaconError> { errorSubject.toSignal() }

    /// The values as an `AsyncSequence`: the current value (once known), then every change. Throws
    /// ``BeaconError/Code/decodingFailed`` when a value does not decode, and the daemon's error when it refuses
    /// the watch. Iterating keeps the property watched.
    public var updates: AsyncThrowingStream<Value, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Value.self)
        let subscription = observeDeliveries { event in
            switch event {
            case .next(let delivery):
                if let value = delivery.value(as: Value.self) {
                    continuation.yield(value)
                } else if let error = delivery.error {
                    continuation.finish(throwing: error)
                }
            case .completed:
                continuation.finish(throwing: self.keyError)
            }
        }
        continuation.onTermination = { _ in subscription.dispose() }
        return stream
    }

    func report(_ error: BeaconError) {
        errorSubject.send(error)
        client.report(error)
    }

    /// Registers `observer` for deliveries, starting the watch for the first observer. The latest delivery is
    /// sent first; everything runs on ``queue``.
    @usableFromInline
    func observeDeliveries(_ observer: @escaping (Event<RemoteDelivery>) -> Void) -> any Disposable {
        if let keyError {
            report(keyError)
            observer(.completed)
            return NonDisposable.instance
        }
        let registration = SerialDisposable()
        let target = UncheckedBox(observer)
        retain()
        async {
            guard !registration.isDisposed else { return }
            let latest = self.state.withLock { $0.latest }
            registration.inner = self.deliveries.observe(with: target.value)
            if let latest, !registration.isDisposed { target.value(.next(latest)) }
        }
        return BlockDisposable {
            registration.dispose()
            self.release()
        }
    }

    private func retain() {
        let start = state.withLock { state -> Int? in
            state.observers += 1
            guard state.observers == 1 else { return nil }
            state.session += 1
            return state.session
        }
        guard let session = start else { return }
        let task = Task { await self.runWatch(session: session) }
        let stale = state.withLock { state -> Bool in
            if state.session == session && state.observers > 0 {
                state.task = task
                return false
            }
            return true
        }
        if stale { task.cancel() }
    }

    private func release() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.observers -= 1
            guard state.observers == 0 else { return nil }
            state.session += 1
            state.latest = nil
            state.lastGood = nil
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }

    private func runWatch(session: Int) async {
        // A remote property reads only values: its changes come without their origin.
        let watch = PropertyWatch(patterns: [key], initial: true, old: false, origin: false)
        let error = await watch.runKey(on: client) { snapshot in self.deliver(snapshot, session: session) }
        if let error, !Task.isCancelled {
            // Closing the client ends every watch; that is no error to report.
            if error.code != .clientClosed { report(error) }
            async { self.deliveries.send(completion: ()) }
        }
    }

    private func deliver(_ snapshot: RemoteSnapshot, session: Int) {
        queue.submit(.delivery(snapshot, session: session), run: perform)
    }

    /// Runs `work` in order with the deliveries.
    func async(_ work: @escaping @Sendable () -> Void) {
        queue.submit(.run(work), run: perform)
    }

    private func perform(_ work: RemotePropertyWork) {
        switch work {
        case .run(let work):
            work()
        case .delivery(let snapshot, let session):
            let delivery: Delivery
            do throws(BeaconError) {
                delivery = Delivery(value: try decodeValue(snapshot.json, snapshot.version), snapshot: snapshot)
            } catch {
                delivery = Delivery(error: error, snapshot: snapshot)
            }
            let current = state.withLock { state -> Bool in
                guard state.session == session else { return false }
                if let latest = state.latest, !delivery.snapshot.isNewer(than: latest.snapshot) { return false }
                state.latest = delivery
                if delivery.error == nil { state.lastGood = delivery.value }
                return true
            }
            guard current else { return }
            if let error = delivery.error { report(error) }
            deliveries.send(delivery)
        }
    }
}

/// One state a remote property delivered: its value decoded as the property's `Value` (or why it did not decode) and
/// the snapshot it came from.
///
/// Not generic, and neither is ``RemotePropertyState``: a remote property's methods run unspecialized for its
/// `Value`, and there every generic type built on `Value` (a `Result`, this struct, the events of the subject that
/// carries it, the state under the lock) cost a look-up of its type metadata for every change, about 20 of them.
/// The value travels as `any Sendable` and is cast back to `Value` where an observer takes it.
@usableFromInline
struct RemoteDelivery: Sendable {
    /// The decoded value; `nil` when it did not decode.
    @usableFromInline var value: (any Sendable)?
    var error: BeaconError?
    var snapshot: RemoteSnapshot

    init(value: any Sendable, snapshot: RemoteSnapshot) {
        self.value = value
        self.snapshot = snapshot
    }

    init(error: BeaconError, snapshot: RemoteSnapshot) {
        self.error = error
        self.snapshot = snapshot
    }

    /// The decoded value as `V`, the property's `Value`, which it always is; `nil` when it did not decode. One
    /// comparison of the types checks that, where `as!` would run the runtime's general cast out of an existential
    /// (about 300 instructions per change).
    @inlinable
    func value<V>(as _: V.Type) -> V? {
        guard let value else { return nil }
        func take<T>(_ opened: T) -> V {
            precondition(T.self == V.self, "a remote property delivered a \(T.self), not a \(V.self)")
            return unsafeBitCast(opened, to: V.self)
        }
        return _openExistential(value, do: take)
    }
}

/// What a remote property keeps under its lock (see ``RemoteDelivery`` for why it is not generic).
struct RemotePropertyState {
    var observers = 0
    var session = 0
    var task: Task<Void, Never>?
    var latest: RemoteDelivery?
    /// The last value that decoded, a `Value`.
    var lastGood: (any Sendable)?
}

/// What runs in order on a remote property's queue. Not generic, so that queueing needs no type metadata from the
/// runtime.
enum RemotePropertyWork: Sendable {
    /// A state from the watch of `session`, decoded when its turn comes.
    case delivery(RemoteSnapshot, session: Int)
    /// Any other work.
    case run(@Sendable () -> Void)
}

/// Carries a non-`Sendable` observer closure to the property's queue, where it is only ever called.
struct UncheckedBox<Wrapped>: @unchecked Sendable {
    // Sendable: the closure is handed over once and then only called on one serial queue.
    let value: Wrapped
    init(_ value: Wrapped) { self.value = value }
}
