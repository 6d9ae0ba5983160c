precedencegroup BindingPrecedence {
    associativity: right
    higherThan: AssignmentPrecedence
    lowerThan: TernaryPrecedence
}

/// Input binding: `target <~ signal` sends the values of `signal` into `target`.
infix operator <~ : BindingPrecedence

// Output binding, `signal ~> target`, uses the `~>` operator the standard library declares.

/// Binds `source` to `target`; see ``BindableProtocol/bind(signal:)``.
@discardableResult
@inlinable
public func <~ <Target: BindableProtocol, Source: SignalProtocol>(
    target: Target,
    source: Source
) -> any Disposable where Source.Element == Target.Element {
    target.bind(signal: source.toSignal())
}

/// Binds a signal of values to a target of optional values.
@discardableResult
@inlinable
public func <~ <Target: BindableProtocol, Source: SignalProtocol>(
    target: Target,
    source: Source
) -> any Disposable where Target.Element == Source.Element? {
    target.bind(signal: source.map { Optional($0) })
}

/// Binds `source` to `target`; the mirror image of `<~`.
@discardableResult
@inlinable
public func ~> <Source: SignalProtocol, Target: BindableProtocol>(
    source: Source,
    target: Target
) -> any Disposable where Source.Element == Target.Element {
    target.bind(signal: source.toSignal())
}

/// Calls `action` with each value of `source`; the same as ``SignalProtocol/observeNext(with:)``.
@discardableResult
public func ~> <Source: SignalProtocol>(
    source: Source,
    action: @escaping (Source.Element) -> Void
) -> any Disposable {
    source.observeNext(with: action)
}

extension SignalProtocol {
    /// Binds this signal to `target`.
    @discardableResult
    @inlinable
    public func bind<Target: BindableProtocol>(to target: Target) -> any Disposable
    where Target.Element == Element {
        target.bind(signal: toSignal())
    }

    /// Calls `setter(target, value)` for each value while `target` is alive; see ``BindingTarget``
    /// for the lifetime rules.
    @discardableResult
    public func bind<Target: AnyObject>(
        to target: Target,
        context: ExecutionContext = .immediate,
        setter: @escaping (Target, Element) -> Void
    ) -> any Disposable {
        BindingTarget(object: target, context: context, setter: setter).bind(signal: toSignal())
    }

    /// Sets `keyPath` of `target` to each value while `target` is alive; see ``BindingTarget``.
    @discardableResult
    public func bind<Target: AnyObject>(
        to target: Target,
        _ keyPath: ReferenceWritableKeyPath<Target, Element>,
        context: ExecutionContext = .immediate
    ) -> any Disposable {
        BindingTarget(object: target, keyPath, context: context).bind(signal: toSignal())
    }

    /// Sets an optional `keyPath` of `target` to each value while `target` is alive.
    @discardableResult
    public func bind<Target: AnyObject>(
        to target: Target,
        _ keyPath: ReferenceWritableKeyPath<Target, Element?>,
        context: ExecutionContext = .immediate
    ) -> any Disposable {
        BindingTarget(object: target, keyPath, context: context).bind(signal: map { Optional($0) })
    }
}

/// Two-way binding: `lhs <~> rhs` keeps both equal, `lhs` first taking the value of `rhs` (as with `<~`).
infix operator <~> : BindingPrecedence

/// Keeps two properties equal, without feedback loops; see ``Property/bidirectionalBind(to:)``.
@discardableResult
public func <~> <Value>(lhs: Property<Value>, rhs: Property<Value>) -> any Disposable {
    rhs.bidirectionalBind(to: lhs)
}
