/// A hot signal you send values into; each value goes to the observers registered at that moment.
///
/// Threads: ``send(_:)`` may be called from any thread, also concurrently; each observer is called
/// on the sending thread, after the subject's lock is released. Sends from one thread reach each
/// observer in order. An observer may send into the subject it observes: the nested value is
/// delivered at once to every observer, before the outer send continues (depth first, so observers
/// after the sender see the nested value before the outer one). An observer may dispose itself or
/// others: a disposed observer is not called by the rest of the current delivery. An observer
/// added during a delivery gets the next value, not the current one.
///
/// Lifetime: the subject holds its observers strongly until they are disposed or it completes.
///
/// Sendability: a subject is `Sendable` when `Element` is; a subject of non-`Sendable` values stays
/// within one isolation domain.
public final class PassthroughSubject<Element>: SignalProtocol {
    // All mutable state lives in `observers`, behind its lock.
    @usableFromInline let observers = ObserverList<Element>()

    /// Holds bindings into this object (see ``BindingOwner``); disposed when it is deallocated.
    public let bag = DisposeBag()

    public init() {}

    deinit {
        // The observers' handles hold the list: without this, the list and its observers would outlive the subject.
        observers.removeAll()
    }

    /// Sends `value` to every current observer.
    @inlinable
    public func send(_ value: Element) {
        observers.send(value)
    }

    /// Completes the subject: observers get ``Event/completed`` and are released; later sends and
    /// observers get nothing (a late observer gets `.completed` at once).
    public func send(completion: Void = ()) {
        observers.complete()
    }

    @discardableResult
    @inlinable
    public func observe(with observer: @escaping (Event<Element>) -> Void) -> any Disposable {
        if let entry = observers.add(observer) { return entry }
        observer(.completed)
        return NonDisposable.instance
    }

    /// The number of observers currently registered.
    public var observerCount: Int { observers.count }
}

extension PassthroughSubject: Sendable where Element: Sendable {}

extension PassthroughSubject where Element == Void {
    /// Sends `()`.
    @inlinable
    public func send() { send(()) }
}
