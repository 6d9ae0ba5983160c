import Foundation
import Observation

/// A key of a ``BeaconUserDefaults`` suite as a property, like SwiftUI's `@AppStorage`: reads give the current value
/// (or the wrapped default while the key holds none), writes go through to the daemon, and a change made by another
/// process is seen at once, by Observation too.
///
/// ```swift
/// @Observable final class EditorModel {
///     @ObservationIgnored @BeaconDefault("fontSize", store: defaults) var fontSize = 12
/// }
/// withObservationTracking { _ = model.fontSize } onChange: { print("changed, here or elsewhere") }
/// ```
///
/// In an `@Observable` model the property is marked `@ObservationIgnored` (the macro does not take property
/// wrappers); reading it still registers with Observation, through the wrapper's own observable value.
@propertyWrapper
public struct BeaconDefault<Value>: @unchecked Sendable {
    private let value: ObservedDefault<Value>

    public init(wrappedValue: Value, _ key: String, store: BeaconUserDefaults) {
        value = ObservedDefault(key: key, store: store, defaultValue: wrappedValue)
    }

    public var wrappedValue: Value {
        get { value.current }
        nonmutating set { value.write(newValue) }
    }
}

/// The value behind a ``BeaconDefault``: observable, and read again from the store at each change of its suite.
@Observable
final class ObservedDefault<Value>: @unchecked Sendable {
    private(set) var current: Value
    @ObservationIgnored private let key: String
    @ObservationIgnored private let store: BeaconUserDefaults
    @ObservationIgnored private let defaultValue: Value
    @ObservationIgnored private var token: (any NSObjectProtocol)?

    init(key: String, store: BeaconUserDefaults, defaultValue: Value) {
        self.key = key
        self.store = store
        self.defaultValue = defaultValue
        current = store.object(forKey: key) as? Value ?? defaultValue
        token = NotificationCenter.default.addObserver(
            forName: UserDefaults.didChangeNotification, object: store, queue: nil
        ) { [weak self] _ in self?.reload() }
    }

    deinit {
        if let token { NotificationCenter.default.removeObserver(token) }
    }

    private func reload() {
        let fresh = store.object(forKey: key) as? Value ?? defaultValue
        // Only a change of this key is news to its observers.
        if let fresh = fresh as? AnyHashable, let old = current as? AnyHashable, fresh == old { return }
        current = fresh
    }

    func write(_ newValue: Value) {
        store.set(newValue, forKey: key)
        reload()
    }
}
