/// Bounds on property and notification names.
public struct KeyLimits: Sendable, Hashable {
    /// The longest name accepted, in bytes.
    public var maxLength: Int
    /// The most dot-separated segments accepted.
    public var maxDepth: Int

    public init(maxLength: Int = 256, maxDepth: Int = 16) {
        self.maxLength = maxLength
        self.maxDepth = maxDepth
    }

    /// 256 bytes, 16 segments.
    public static let `default` = KeyLimits()
}

/// Why a key or pattern was rejected.
public struct KeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rejected text (shortened when very long).
    public var input: String
    /// Why it was rejected.
    public var reason: String

    public init(input: String, reason: String) {
        self.input = input.utf8.count > 300 ? String(input.prefix(300)) + "…" : input
        self.reason = reason
    }

    public var description: String { "invalid key \"\(input)\": \(reason)" }
}

/// Checks the shared syntax of keys and patterns; returns the number of segments.
func checkKeySyntax(_ string: String, limits: KeyLimits, allowWildcards: Bool) throws(KeyError) -> Int {
    let utf8 = string.utf8
    guard !utf8.isEmpty else { throw KeyError(input: string, reason: "empty") }
    guard utf8.count <= limits.maxLength else {
        throw KeyError(input: string, reason: "longer than \(limits.maxLength) bytes")
    }
    var segments = 1
    var segmentLength = 0
    var stars = 0
    var sawDoubleStarSegment = false
    for byte in utf8 {
        switch byte {
        case UInt8(ascii: "."):
            guard segmentLength > 0 else { throw KeyError(input: string, reason: "empty segment") }
            if sawDoubleStarSegment {
                throw KeyError(input: string, reason: "'**' is only allowed as the last segment")
            }
            if stars == 2 { sawDoubleStarSegment = true }
            segments += 1
            segmentLength = 0
            stars = 0
        case UInt8(ascii: "*"):
            guard allowWildcards else { throw KeyError(input: string, reason: "wildcards are not allowed in a key") }
            guard stars == segmentLength else {
                throw KeyError(input: string, reason: "'*' must be a whole segment")
            }
            stars += 1
            segmentLength += 1
            if stars > 2 { throw KeyError(input: string, reason: "'***' is not a wildcard") }
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            if stars > 0 { throw KeyError(input: string, reason: "'*' must be a whole segment") }
            segmentLength += 1
        default:
            let shown = byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte \(byte)"
            throw KeyError(input: string, reason: "invalid character \(shown); segments are [A-Za-z0-9_-]")
        }
    }
    guard segmentLength > 0 else { throw KeyError(input: string, reason: "empty segment") }
    if sawDoubleStarSegment { throw KeyError(input: string, reason: "'**' is only allowed as the last segment") }
    guard segments <= limits.maxDepth else {
        throw KeyError(input: string, reason: "more than \(limits.maxDepth) segments")
    }
    return segments
}
