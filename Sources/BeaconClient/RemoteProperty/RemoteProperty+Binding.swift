import BeaconProtocol
import Signals
import Synchronization

extension RemoteProperty: BindableProtocol {
    /// Writes each value of `signal` to the daemon, in order (`Set`; for a `RemoteProperty<Wrapped?>`, `nil` is an
    /// `Unset`). Last writer wins; use ``bidirectionalBind(to:)`` for compare-and-set. Failed writes are reported
    /// on ``errors``. The binding ends when `signal` completes, the returned disposable is disposed or this
    /// property is deallocated.
    @discardableResult
    public func bind(signal: Signal<Value>) -> any Disposable {
        let binding = SerialDisposable()
        binding.inner = signal.observe { [weak self] event in
            switch event {
            case .next(let value):
                guard let self else {
                    binding.dispose()
                    return
                }
                self.write(value)
            case .completed:
                binding.dispose()
            }
        }
        bag.add(binding)
        return binding
    }

    /// Queues a write of `value` (unconditional, in order with the other writes of bindings).
    public func write(_ value: Value) {
        let json: JSONValue?
        do throws(BeaconError) {
            json = try encodeValue(value)
        } catch {
            report(error)
            return
        }
        let client = self.client
        let key = self.key
        writes.enqueue { () throws(BeaconError) in
            if let json {
                try await client.set(key, to: json)
            } else {
                do throws(BeaconError) {
                    try await client.unset(key)
                } catch  where error.code == .keyNotFound {
                }
            }
        }
    }

    /// Writes `value` now and returns the version of the change; `ifVersion` makes it a compare-and-set (see
    /// ``BeaconClient/set(_:to:ifVersion:ephemeral:)``).
    @discardableResult
    public func set(_ value: Value, ifVersion: Int64? = nil) async throws(BeaconError) -> Int64 {
        if let json = try encodeValue(value) {
            return try await client.set(key, to: json, ifVersion: ifVersion)
        }
        return try await client.unset(key, ifVersion: ifVersion)
    }

    /// Keeps `local` and the remote key equal, in both directions, with compare-and-set.
    ///
    /// - `local` first takes the remote value (the default value, or `nil`, when the key does not exist).
    /// - A change of `local` is written with `ifVersion` set to the version of the remote state it replaces. When
    ///   someone else changed the key meanwhile, the write fails, ``errors`` reports a
    ///   ``BeaconError/Code/versionMismatch`` and `local` takes the remote value: nothing is overwritten
    ///   silently.
    /// - A remote change is set on `local`; values the other side already has are never sent back, so two
    ///   clients bound to the same key do not loop.
    ///
    /// `local` is set on this property's queue. The binding keeps the key watched; it ends when the returned
    /// disposable is disposed or `local` is deallocated.
    @discardableResult
    public func bidirectionalBind(to local: Property<Value>) -> any Disposable {
        let binding = CompositeDisposable()
        let sync = TwoWayBinding(remote: self, local: local)
        binding += observeDeliveries { event in
            if case .next(let delivery) = event { sync.remoteChanged(delivery) }
        }
        binding += local.observeNext { [weak local] value in
            guard local != nil else { return }
            sync.localChanged(value)
        }
        local.bag.add(binding)
        return binding
    }
}

/// Runs a ``TwoWaySync`` for one binding: every input is processed on the remote property's queue, in order, and
/// every action is performed there too (writes start there and complete back on it).
final class TwoWayBinding<Value: Sendable>: Sendable {
    private let remote: RemoteProperty<Value>
    private let local: WeakBox<Property<Value>>
    private let sync = Mutex(TwoWaySync())

    init(remote: RemoteProperty<Value>, local: Property<Value>) {
        self.remote = remote
        self.local = WeakBox(local)
    }

    /// Called on the remote property's queue.
    func remoteChanged(_ delivery: RemoteProperty<Value>.Delivery) {
        let actions = sync.withLock { $0.remoteChanged(delivery.snapshot) }
        perform(actions)
    }

    /// Called on whatever thread changed the local property. The value is read again on the queue, so that
    /// changes overtaken by later ones (or by a remote value set meanwhile) are not written.
    func localChanged(_ value: Value) {
        remote.async {
            guard let json = self.currentLocalJSON() else { return }
            let actions = self.sync.withLock { $0.localChanged(json) }
            self.perform(actions)
        }
    }

    /// The JSON of the local value now; `nil` when the property is gone or its value does not encode (reported).
    private func currentLocalJSON() -> JSONValue?? {
        guard let local = local.value else { return nil }
        do throws(BeaconError) {
            return .some(try remote.encodeValue(local.value))
        } catch {
            remote.report(error)
            return nil
        }
    }

    /// Runs on the remote property's queue.
    private func perform(_ actions: [TwoWaySync.Action]) {
        for action in actions {
            switch action {
            case .setLocal(let json):
                applyLocal(json)
            case .write(let json, let ifVersion):
                startWrite(json, ifVersion: ifVersion)
            case .conflict(let attempted, let expected):
                reportConflict(attempted: attempted, expected: expected)
            }
        }
    }

    private func reportConflict(attempted: JSONValue?, expected: Int64) {
        remote.report(
            BeaconError.client(
                .versionMismatch, "Conflict",
                "\(remote.key) changed remotely before the local change was written; the remote value wins",
                parameters: [
                    "key": .string(remote.key), "expected": .int(expected), "attempted": attempted ?? .null,
                ]))
    }

    private func applyLocal(_ json: JSONValue?) {
        guard let local = local.value else { return }
        let (version, known, previousVersion) = sync.withLock { sync in
            (sync.remote?.version ?? 0, sync.localBeforeAdopting, sync.remoteBeforeAdopting?.keyVersion ?? 0)
        }
        let value: Value
        do throws(BeaconError) {
            value = try remote.decodeValue(json, version)
            let roundTrip = try remote.encodeValue(value)
            // A local change not processed yet was made on the previous remote state: it lost the race.
            if let current = currentLocalJSON(), let known, current != known, current != roundTrip {
                reportConflict(attempted: current, expected: previousVersion)
            }
            sync.withLock { $0.localApplied(roundTrip) }
        } catch {
            // RemoteProperty reports values that do not decode; the local value stays.
            return
        }
        local.set(value)
    }

    private func startWrite(_ json: JSONValue?, ifVersion: Int64) {
        let client = remote.client
        let key = remote.key
        Task {
            var outcome: Result<Int64, BeaconError>
            do throws(BeaconError) {
                if let json {
                    outcome = .success(try await client.set(key, to: json, ifVersion: ifVersion))
                } else {
                    outcome = .success(try await client.unset(key, ifVersion: ifVersion))
                }
            } catch  where json == nil && error.code == .keyNotFound {
                outcome = .success(0)
            } catch {
                outcome = .failure(error)
            }
            let result = outcome
            self.remote.async {
                let actions = self.sync.withLock { sync in
                    switch result {
                    case .success(let version): return sync.writeSucceeded(version: version)
                    case .failure(let error): return sync.writeFailed(mismatch: error.code == .versionMismatch)
                    }
                }
                if case .failure(let error) = result, error.code != .versionMismatch { self.remote.report(error) }
                self.perform(actions)
            }
        }
    }
}

/// A weak reference that can cross threads; the referenced object is thread-safe.
final class WeakBox<Object: AnyObject & Sendable>: Sendable {
    private let storage: Mutex<WeakReference>

    private struct WeakReference: @unchecked Sendable {
        // Sendable: Object is Sendable; the reference is only read and written under the mutex.
        weak var object: Object?
    }

    init(_ object: Object) {
        storage = Mutex(WeakReference(object: object))
    }

    var value: Object? { storage.withLock { $0.object } }
}
