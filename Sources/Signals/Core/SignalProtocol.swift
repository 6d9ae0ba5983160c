/// Something that sends ``Event``s to observers: the root of every signal type in this module.
///
/// Conforming types implement ``observe(with:)``; every operator and binding is built on it.
public protocol SignalProtocol<Element> {
    associatedtype Element

    /// Starts observing. `observer` receives each event; the returned disposable ends the
    /// observation.
    @discardableResult
    func observe(with observer: @escaping (Event<Element>) -> Void) -> any Disposable
}

extension SignalProtocol {
    /// Observes values only.
    @discardableResult
    @inlinable
    public func observeNext(with observer: @escaping (Element) -> Void) -> any Disposable {
        observe { event in
            if case .next(let element) = event { observer(element) }
        }
    }

    /// Observes the completion only.
    @discardableResult
    public func observeCompleted(with observer: @escaping () -> Void) -> any Disposable {
        observe { event in
            if case .completed = event { observer() }
        }
    }

    /// Observes values and, optionally, the completion.
    @discardableResult
    public func sink(
        receiveCompletion: (() -> Void)? = nil,
        receiveValue: @escaping (Element) -> Void
    ) -> any Disposable {
        observe { event in
            switch event {
            case .next(let element): receiveValue(element)
            case .completed: receiveCompletion?()
            }
        }
    }

    /// This signal as a ``Signal``, hiding the concrete type.
    @inlinable
    public func toSignal() -> Signal<Element> {
        if let signal = self as? Signal<Element> { return signal }
        return Signal { observer in self.observe(with: observer) }
    }
}
