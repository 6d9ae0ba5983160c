import BeaconProtocol
import Signals

extension BeaconClient {
    /// The property stored under `key` as a `Value`, which observers get as `defaultValue` while the key does not
    /// exist.
    ///
    /// ```swift
    /// label.reactive.text <~ client.property("user.name", as: String.self, default: "")
    /// ```
    ///
    /// A stored value that does not decode as `Value` is reported (see ``RemoteProperty``), not delivered.
    public func property<Value: Codable & Sendable>(
        _ key: String,
        as type: Value.Type,
        default defaultValue: Value
    ) -> RemoteProperty<Value> {
        RemoteProperty(
            client: self, key: key,
            decode: { (json, version) throws(BeaconError) in
                guard let json else { return defaultValue }
                return try ValueCoding.decode(Value.self, from: json, key: key, version: version)
            },
            encode: { (value) throws(BeaconError) in try ValueCoding.encode(value, key: key) }
        )
    }

    /// The property stored under `key` as an optional `Value`: `nil` while the key does not exist (or holds
    /// JSON `null`); writing `nil` deletes the key.
    public func property<Value: Codable & Sendable>(
        _ key: String,
        as type: Value.Type
    ) -> RemoteProperty<Value?> {
        RemoteProperty(
            client: self, key: key,
            decode: { (json, version) throws(BeaconError) in
                guard let json, !json.isNull else { return nil }
                return try ValueCoding.decode(Value.self, from: json, key: key, version: version)
            },
            encode: { (value) throws(BeaconError) in
                guard let value else { return nil }
                return try ValueCoding.encode(value, key: key)
            }
        )
    }

    /// The changes of the keys matching `patterns` as a signal: each observation runs its own watch, across
    /// reconnections (resubscribing with `since`, so no change is missed); disposing it ends the watch.
    ///
    /// With `initial`, the current value of every matching key comes first. A watch the daemon refuses is
    /// reported on ``errors`` and completes the signal.
    public func propertyChanges(_ patterns: [String], initial: Bool = false) -> Signal<PropertyChange> {
        Signal { observer in
            let target = UncheckedBox(observer)
            let watch = PropertyWatch(patterns: patterns, initial: initial, old: false)
            let subscription = SerialDisposable()
            let task = Task {
                let error = await watch.run(on: self) { batch in
                    for change in batch.changes where !subscription.isDisposed { target.value(.next(change)) }
                }
                if let error, !subscription.isDisposed {
                    if error.code != .clientClosed { self.report(error) }
                    target.value(.completed)
                }
            }
            subscription.inner = BlockDisposable { task.cancel() }
            return subscription
        }
    }
}
