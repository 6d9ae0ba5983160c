

/// A value that changes over time: it holds the current value and gives it to each new observer
/// first, then every later value.
///
/// Threads: ``value`` may be read and written from any thread. A write stores the value under the
/// property's lock and calls observers after releasing it, on the writing thread. Observers are
/// never called while the lock is held, so an observer may read or write the property.
///
/// Ordering: for writes from one thread, each observer sees the values in write order. A new
/// observer gets the value current at the moment it registers, then every later write.
public final class Property<Value>: SignalProtocol, @unchecked Sendable {
    public typealias Element = Value

    // Sendable: `storage` is locked; `observers` has its own lock.
    @usableFromInline let storage: Locked<Value>
    @usableFromInline let observers = ObserverList<Value>()

    public init(_ value: Value) {
        storage = Locked(value)
    }

    /// The current value. Setting it notifies every observer.
    public var value: Value {
        get { storage.withLock { $0 } }
        set { set(newValue) }
    }

    /// Stores `newValue` and sends it to the observers.
    @inlinable
    public func set(_ newValue: Value) {
        storage.withLock { $0 = newValue }
        observers.send(newValue)
    }

    /// Stores `newValue` without telling the observers.
    public func silentUpdate(_ newValue: Value) {
        storage.withLock { $0 = newValue }
    }

    /// Sends the current value and then every later value to `observer`.
    @discardableResult
    public func observe(with observer: @escaping (Event<Value>) -> Void) -> any Disposable {
        // Register first, then read: a write that races with registration is delivered, at worst
        // right after an initial value that already equals it.
        guard let entry = observers.add(observer) else {
            observer(.completed)
            return NonDisposable.instance
        }
        let current = storage.withLock { $0 }
        if !entry.isDisposed { observer(.next(current)) }
        return entry
    }

    /// The number of observers currently registered.
    public var observerCount: Int { observers.count }

    /// A read-only view of this property.
    public var readOnly: AnyProperty<Value> { AnyProperty(self) }
}

/// A read-only view of a ``Property``: observable, but only its owner can write.
public struct AnyProperty<Value>: SignalProtocol, @unchecked Sendable {
    // Sendable: it only forwards to a Property, which is thread-safe.
    private let base: Property<Value>

    public init(_ base: Property<Value>) {
        self.base = base
    }

    /// The current value.
    public var value: Value { base.value }

    @discardableResult
    public func observe(with observer: @escaping (Event<Value>) -> Void) -> any Disposable {
        base.observe(with: observer)
    }
}
