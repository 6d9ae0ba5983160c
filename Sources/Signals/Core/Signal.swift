/// A sequence of values over time that cannot fail.
///
/// A `Signal` is a recipe: each call to ``observe(with:)`` runs the producer closure given to
/// ``init(_:)`` for that observer. Hot sources (``PassthroughSubject``, ``Property``) share one
/// stream among all observers; operators build new signals on top of them.
///
/// Guarantees: events reach an observer in the order the producer sends them, on the thread that
/// sends them; after ``Event/completed`` an observer gets nothing more; after the disposable
/// returned by ``observe(with:)`` is disposed, no delivery that starts later reaches the observer.
public struct Signal<Element>: SignalProtocol {
    public typealias Producer = (_ observer: @escaping (Event<Element>) -> Void) -> any Disposable

    @usableFromInline
    let producer: Producer

    /// Creates a signal whose observers are served by `producer`.
    ///
    /// The producer is called once per observer. It sends events to that observer and returns a
    /// disposable that stops the sending.
    @inlinable
    public init(_ producer: @escaping Producer) {
        self.producer = producer
    }

    @discardableResult
    @inlinable
    public func observe(with observer: @escaping (Event<Element>) -> Void) -> any Disposable {
        producer(observer)
    }
}

extension Signal {
    /// A signal that sends `value` to each observer, then completes.
    public static func just(_ value: Element) -> Signal {
        Signal { observer in
            observer(.next(value))
            observer(.completed)
            return NonDisposable.instance
        }
    }

    /// A signal that sends `values` to each observer in order, then completes.
    public static func sequence<S: Sequence>(_ values: S) -> Signal where S.Element == Element {
        Signal { observer in
            for value in values { observer(.next(value)) }
            observer(.completed)
            return NonDisposable.instance
        }
    }

    /// A signal that completes at once.
    public static var completed: Signal {
        Signal { observer in
            observer(.completed)
            return NonDisposable.instance
        }
    }

    /// A signal that never sends anything.
    public static var never: Signal {
        Signal { _ in NonDisposable.instance }
    }
}
