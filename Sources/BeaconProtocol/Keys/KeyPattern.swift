/// A pattern over ``PropertyKey``s: an exact key, with `*` standing for exactly one segment and `**`, allowed only
/// as the last segment, for one or more trailing segments.
///
/// `power.**` matches `power.x` and `power.x.y` but not `power`; `app.*.state` matches `app.mail.state`; a lone
/// `**` matches every key.
public struct KeyPattern: Sendable, Hashable, CustomStringConvertible {
    private enum Segment: Sendable, Hashable {
        case literal(Substring)
        case one
        case rest
    }

    public let rawValue: String
    private let pattern: [Segment]

    public init(_ string: String, limits: KeyLimits = .default) throws(KeyError) {
        _ = try checkKeySyntax(string, limits: limits, allowWildcards: true)
        self.rawValue = string
        self.pattern = string.split(separator: ".", omittingEmptySubsequences: false).map { segment in
            switch segment {
            case "*": return .one
            case "**": return .rest
            default: return .literal(segment)
            }
        }
    }

    /// A pattern that matches exactly `key`.
    public init(exactly key: PropertyKey) {
        self.rawValue = key.rawValue
        self.pattern = key.segments.map { .literal($0) }
    }

    /// Whether the pattern has no wildcards.
    public var isExact: Bool {
        pattern.allSatisfy { if case .literal = $0 { return true } else { return false } }
    }

    /// The segments before the first wildcard.
    public var literalPrefix: [Substring] {
        var prefix: [Substring] = []
        for segment in pattern {
            guard case .literal(let text) = segment else { break }
            prefix.append(text)
        }
        return prefix
    }

    public func matches(_ key: PropertyKey) -> Bool {
        let utf8 = key.rawValue.utf8
        // The start of the key's next unmatched segment, or nil once every segment is matched.
        var next: String.UTF8View.Index? = utf8.startIndex
        for segment in pattern {
            guard let start = next else { return false }
            let end = utf8[start...].firstIndex(of: UInt8(ascii: ".")) ?? utf8.endIndex
            switch segment {
            case .rest:
                return true
            case .one:
                break
            case .literal(let text):
                guard utf8[start..<end].elementsEqual(text.utf8) else { return false }
            }
            next = end == utf8.endIndex ? nil : utf8.index(after: end)
        }
        return next == nil
    }

    public var description: String { rawValue }

    public static func == (lhs: KeyPattern, rhs: KeyPattern) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
