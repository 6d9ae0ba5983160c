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
    var utf8 = string
    let result = utf8.withUTF8 { checkKeySyntax(bytes: $0, limits: limits, allowWildcards: allowWildcards) }
    switch result {
    case .success(let segments): return segments
    case .failure(let failure): throw KeyError(input: string, reason: failure.reason)
    }
}

/// Why ``checkKeySyntax(bytes:limits:allowWildcards:)`` rejected a key or pattern.
private enum KeySyntaxFailure: Error {
    case empty
    case tooLong(Int)
    case emptySegment
    case doubleStarNotLast
    case wildcardInKey
    case starNotWholeSegment
    case tripleStar
    case invalidCharacter(UInt8)
    case tooDeep(Int)

    var reason: String {
        switch self {
        case .empty: return "empty"
        case .tooLong(let limit): return "longer than \(limit) bytes"
        case .emptySegment: return "empty segment"
        case .doubleStarNotLast: return "'**' is only allowed as the last segment"
        case .wildcardInKey: return "wildcards are not allowed in a key"
        case .starNotWholeSegment: return "'*' must be a whole segment"
        case .tripleStar: return "'***' is not a wildcard"
        case .invalidCharacter(let byte):
            let shown = byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte \(byte)"
            return "invalid character \(shown); segments are [A-Za-z0-9_-]"
        case .tooDeep(let limit): return "more than \(limit) segments"
        }
    }
}

/// The syntax check of ``checkKeySyntax(_:limits:allowWildcards:)`` over the UTF-8 of a key or pattern.
private func checkKeySyntax(
    bytes: UnsafeBufferPointer<UInt8>, limits: KeyLimits, allowWildcards: Bool
) -> Result<Int, KeySyntaxFailure> {
    if let segments = validKeySegments(bytes, limits: limits) { return .success(segments) }
    return checkSyntax(bytes: bytes, limits: limits, allowWildcards: allowWildcards)
}

/// The number of segments of a valid key without wildcards, or `nil` for anything else (which may still be a
/// valid pattern). One test per byte against a bit table, for the names every call carries.
private func validKeySegments(_ bytes: UnsafeBufferPointer<UInt8>, limits: KeyLimits) -> Int? {
    // Bits for [-0-9] among bytes 0-63 and for [A-Z_a-z] among bytes 64-127.
    let low: UInt64 = 1 << 45 | 0x3FF << 48
    let high: UInt64 = 0x07FF_FFFE | 1 << 31 | 0x07FF_FFFE << 32
    guard !bytes.isEmpty, bytes.count <= limits.maxLength else { return nil }
    var segments = 1
    var afterDot = true
    for byte in bytes {
        if byte == UInt8(ascii: ".") {
            if afterDot { return nil }
            segments &+= 1
            afterDot = true
            continue
        }
        let table = byte < 64 ? low : high
        guard byte < 128, table & (1 << UInt64(byte & 63)) != 0 else { return nil }
        afterDot = false
    }
    guard !afterDot, segments <= limits.maxDepth else { return nil }
    return segments
}

/// The whole syntax check, which names what is wrong.
private func checkSyntax(
    bytes: UnsafeBufferPointer<UInt8>, limits: KeyLimits, allowWildcards: Bool
) -> Result<Int, KeySyntaxFailure> {
    guard !bytes.isEmpty else { return .failure(.empty) }
    guard bytes.count <= limits.maxLength else { return .failure(.tooLong(limits.maxLength)) }
    var segments = 1
    var segmentLength = 0
    var stars = 0
    var sawDoubleStarSegment = false
    for byte in bytes {
        switch byte {
        case UInt8(ascii: "."):
            guard segmentLength > 0 else { return .failure(.emptySegment) }
            if sawDoubleStarSegment { return .failure(.doubleStarNotLast) }
            if stars == 2 { sawDoubleStarSegment = true }
            segments += 1
            segmentLength = 0
            stars = 0
        case UInt8(ascii: "*"):
            guard allowWildcards else { return .failure(.wildcardInKey) }
            guard stars == segmentLength else { return .failure(.starNotWholeSegment) }
            stars += 1
            segmentLength += 1
            if stars > 2 { return .failure(.tripleStar) }
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            if stars > 0 { return .failure(.starNotWholeSegment) }
            segmentLength += 1
        default:
            return .failure(.invalidCharacter(byte))
        }
    }
    guard segmentLength > 0 else { return .failure(.emptySegment) }
    if sawDoubleStarSegment { return .failure(.doubleStarNotLast) }
    guard segments <= limits.maxDepth else { return .failure(.tooDeep(limits.maxDepth)) }
    return .success(segments)
}
