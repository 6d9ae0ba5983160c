/// A property or notification name: dot-separated segments of `[A-Za-z0-9_-]+`, e.g. `power.battery.level`.
///
/// Keys order segment by segment, so a key sorts right before the keys below it (`a`, `a.b`, `a-b`).
public struct PropertyKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ string: String, limits: KeyLimits = .default) throws(KeyError) {
        _ = try checkKeySyntax(string, limits: limits, allowWildcards: false)
        self.rawValue = string
    }

    /// The dot-separated segments.
    public var segments: [Substring] {
        rawValue.split(separator: ".", omittingEmptySubsequences: false)
    }

    /// Whether `prefix` names this key or one of its ancestors, segment by segment: `a.b` has the prefix `a`,
    /// `a.bc` does not have the prefix `a.b`.
    public func hasPrefix(_ prefix: PropertyKey) -> Bool {
        let key = rawValue.utf8
        let head = prefix.rawValue.utf8
        guard key.starts(with: head) else { return false }
        guard key.count > head.count else { return true }
        return key[key.index(key.startIndex, offsetBy: head.count)] == UInt8(ascii: ".")
    }

    public var description: String { rawValue }

    public static func < (lhs: PropertyKey, rhs: PropertyKey) -> Bool {
        // '.' sorts before every segment byte, which makes byte order segment order.
        var left = lhs.rawValue.utf8.makeIterator()
        var right = rhs.rawValue.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return false
            case (nil, _): return true
            case (_, nil): return false
            case (let l?, let r?):
                if l == r { continue }
                let lw = l == UInt8(ascii: ".") ? 0 : l
                let rw = r == UInt8(ascii: ".") ? 0 : r
                return lw < rw
            }
        }
    }
}
