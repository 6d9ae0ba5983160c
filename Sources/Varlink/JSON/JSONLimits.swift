/// Bounds a parser enforces on untrusted JSON text.
public struct JSONLimits: Sendable, Hashable {
    /// The deepest nesting of arrays and objects accepted; a scalar has depth 0, `[]` depth 1. Values above
    /// ``maximumDepth`` act as ``maximumDepth``.
    public var maxDepth: Int
    /// The largest input accepted, in bytes.
    public var maxBytes: Int

    public init(maxDepth: Int = 64, maxBytes: Int = 1 << 20) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
    }

    /// The deepest nesting any parser accepts, whatever ``maxDepth`` says. Releasing, comparing and encoding a
    /// value take one call level per nesting level, so this bound keeps them safe on small thread stacks.
    public static let maximumDepth = 512

    /// 64 levels, 1 MiB.
    public static let `default` = JSONLimits()
}
