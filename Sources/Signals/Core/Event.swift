/// One thing a signal tells its observers: a value, or that no more values will come.
///
/// Signals in this module never fail. A signal sends any number of ``next(_:)`` events and
/// then at most one ``completed`` event, after which it sends nothing more.
public enum Event<Element> {
    /// A value.
    case next(Element)
    /// The signal has ended; no event follows.
    case completed

    /// The value carried by a ``next(_:)`` event, or `nil` for ``completed``.
    @inlinable
    public var element: Element? {
        if case .next(let element) = self { return element }
        return nil
    }
}

extension Event: Sendable where Element: Sendable {}
extension Event: Equatable where Element: Equatable {}
