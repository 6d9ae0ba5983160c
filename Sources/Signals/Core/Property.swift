/// A value that changes over time: it holds the current value and gives it to each new observer
/// first, then every later value.
///
/// Threads: ``value`` may be read and written from any thread. A write stores the value under the
/// property's lock and calls observers after releasing it, on the writing thread. Observers are
/// never called while the lock is held, so an observer may read or write the property.
///
/// Ordering: for writes from one thread, each observer sees the values in write order. A new
/// observer gets the value current at the moment it registers, then every later write. When
/// threads write at once, each observer gets every value exactly once, but observers may see the
/// writes of different threads in different orders, and ``value`` holds whichever write stored last.
///
/// Lifetime: the property holds its observers strongly until they are disposed; bindings into it
/// (see ``BindingOwner``) end when it is deallocated.
///
/// Sendability: a `Property` is `Sendable` when `Value` is. A property of a non-`Sendable` value
/// can still be observed and written, but only within one isolation domain.
public final class Property<Value>: SignalProtocol {
    public typealias Element = Value

    // The value lives in `observers`, under its lock.
    @usableFromInline let observers: ObserverList<Value>

    /// Holds bindings into this object (see ``BindingOwner``); disposed when it is deallocated.
    public let bag = DisposeBag()

    public init(_ value: Value) {
        observers = ObserverList(current: value)
    }

    deinit {
        // The observers' handles hold the list: without this, the list and its observers would outlive the property.
        observers.removeAll()
    }

    /// The current value. Setting it notifies every observer.
    public var value: Value {
        get { observers.current! }
        set { set(newValue) }
    }

    /// Stores `newValue` and sends it to the observers.
    @inlinable
    public func set(_ newValue: Value) {
        observers.storeAndSend(newValue)
    }

    /// Stores `newValue` without telling the observers.
    public func silentUpdate(_ newValue: Value) {
        observers.state.withLock { $0.current = newValue }
    }

    /// Sends the current value and then every later value to `observer`.
    ///
    /// The observer is registered and the current value read in one step, so no write falls
    /// between them. A write racing on another thread may reach the observer before this initial
    /// value does.
    @discardableResult
    @inlinable
    public func observe(with observer: @escaping (Event<Value>) -> Void) -> any Disposable {
        guard let (entry, current) = observers.addReadingCurrent(observer) else {
            observer(.completed)
            return NonDisposable.instance
        }
        if !entry.isDisposed { observer(.next(current!)) }
        return entry
    }

    /// The number of observers currently registered.
    public var observerCount: Int { observers.count }

    /// A read-only view of this property.
    public var readOnly: AnyProperty<Value> { AnyProperty(self) }
}

extension Property: Sendable where Value: Sendable {}

/// A read-only view of a ``Property``: observable, but only its owner can write.
///
/// It keeps the ordering and thread guarantees of ``Property`` and holds the property strongly. Like
/// the property, it is `Sendable` when `Value` is.
public struct AnyProperty<Value>: SignalProtocol {
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

extension AnyProperty: Sendable where Value: Sendable {}
