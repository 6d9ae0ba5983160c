/// Something a signal can be bound to with `<~`, `~>` or ``SignalProtocol/bind(to:)``.
public protocol BindableProtocol<Element> {
    associatedtype Element

    /// Sends each value of `signal` into this target until the returned disposable is disposed,
    /// `signal` completes, or the target goes away.
    @discardableResult
    func bind(signal: Signal<Element>) -> any Disposable
}

/// The input side of a binding: a weakly held object and how to give it a value.
///
/// Lifetime: the target object is held weakly. When it is a ``BindingOwner`` the binding is added
/// to its bag and ends (releasing the source's observer) as the object is deallocated; otherwise it
/// ends on the first value after the object is gone.
///
/// Threads: values are set in ``context`` (``ExecutionContext/immediate`` by default: on the thread
/// that sends). Use ``ExecutionContext/mainActor`` for user-interface objects.
///
/// ```swift
/// extension Reactive where Base: Label {
///     var text: BindingTarget<String> {
///         BindingTarget(object: base) { label, text in label.text = text }
///     }
/// }
/// label.reactive.text <~ model.title
/// ```
public struct BindingTarget<Value>: BindableProtocol {
    public typealias Element = Value

    @usableFromInline let setter: (Value) -> Bool
    @usableFromInline let lifetime: DisposeBag?
    /// Where values are set.
    public let context: ExecutionContext

    /// A target that calls `setter(object, value)` for each value while `object` is alive.
    public init<Target: AnyObject>(
        object: Target,
        context: ExecutionContext = .immediate,
        setter: @escaping (Target, Value) -> Void
    ) {
        self.setter = { [weak object] value in
            guard let object else { return false }
            setter(object, value)
            return true
        }
        self.lifetime = (object as? any BindingOwner)?.bag
        self.context = context
    }

    /// A target that sets `keyPath` of `object`.
    public init<Target: AnyObject>(
        object: Target,
        _ keyPath: ReferenceWritableKeyPath<Target, Value>,
        context: ExecutionContext = .immediate
    ) {
        self.init(object: object, context: context) { object, value in object[keyPath: keyPath] = value }
    }

    @discardableResult
    public func bind(signal: Signal<Value>) -> any Disposable {
        let binding = SerialDisposable()
        let setter = self.setter
        binding.inner = signal.receive(on: context).observe { event in
            switch event {
            case .next(let value):
                if !setter(value) { binding.dispose() }
            case .completed:
                binding.dispose()
            }
        }
        lifetime?.add(binding)
        return binding
    }
}

extension Property: BindableProtocol {
    /// Sets this property to each value of `signal`. The property is held weakly; the binding ends
    /// when the property is deallocated (it is a ``BindingOwner``).
    ///
    /// Inlinable, as are `<~` and `~>`: a binding made where the value's type is known runs specialized
    /// code for every value, instead of looking up the generic types' metadata at each step.
    @discardableResult
    @inlinable
    public func bind(signal: Signal<Value>) -> any Disposable {
        let binding = SerialDisposable()
        binding.inner = signal.observe { [weak self] event in
            switch event {
            case .next(let value):
                if let self { self.set(value) } else { binding.dispose() }
            case .completed:
                binding.dispose()
            }
        }
        bag.add(binding)
        return binding
    }
}

extension PassthroughSubject: BindableProtocol {
    /// Sends each value of `signal` into this subject (not its completion). The subject is held
    /// weakly; the binding ends when the subject is deallocated.
    @discardableResult
    public func bind(signal: Signal<Element>) -> any Disposable {
        let binding = SerialDisposable()
        binding.inner = signal.observe { [weak self] event in
            switch event {
            case .next(let value):
                if let self { self.send(value) } else { binding.dispose() }
            case .completed:
                binding.dispose()
            }
        }
        bag.add(binding)
        return binding
    }
}
