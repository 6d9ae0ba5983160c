/// A namespace for reactive extensions of `Base`, reached through `.reactive`.
///
/// Add signals and binding targets for a type by extending `Reactive` where `Base` is that type:
///
/// ```swift
/// extension Reactive where Base: Label {
///     var text: BindingTarget<String> { BindingTarget(object: base) { $0.text = $1 } }
/// }
/// ```
///
/// `Reactive` is a plain value that holds `base` strongly for as long as it exists; the signals and
/// binding targets defined on it set their own ordering, thread and lifetime rules (a
/// ``BindingTarget`` holds its object weakly).
public struct Reactive<Base> {
    /// The extended value.
    public let base: Base

    public init(_ base: Base) {
        self.base = base
    }
}

/// A type that has a ``Reactive`` namespace; conform to get `.reactive`.
public protocol ReactiveExtensionProvider {}

extension ReactiveExtensionProvider {
    /// The reactive extensions of this value.
    public var reactive: Reactive<Self> { Reactive(self) }

    /// The reactive extensions of this type.
    public static var reactive: Reactive<Self>.Type { Reactive<Self>.self }
}
