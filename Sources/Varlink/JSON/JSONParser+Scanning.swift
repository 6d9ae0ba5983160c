/// Where a scan found one JSON value in its input, and what it learned about it.
struct ScannedValue {
    enum Kind: UInt8 {
        case null, bool, number, string, array, object
    }

    var kind: Kind = .null
    /// The bytes are exactly what ``JSONValue/encode(into:)`` writes for the value: no whitespace, no escapes,
    /// integers only, an object's members in the order of their names' UTF-8 bytes.
    var isCompact = false
    /// Strings: the bytes between the quotes are the string's UTF-8 (no escapes). Booleans: the value. Numbers:
    /// the value is an `Int64`, in ``integer``.
    var flag = false
    // Offsets are kept in 32 bits, so that a call's parameters stay small to copy; inputs are shorter.
    private var start32: Int32 = 0
    private var end32: Int32 = 0
    var integer: Int64 = 0

    /// Offset of the value's first byte.
    var start: Int {
        get { Int(start32) }
        set { start32 = Int32(truncatingIfNeeded: newValue) }
    }

    /// Offset after the value's last byte.
    var end: Int {
        get { Int(end32) }
        set { end32 = Int32(truncatingIfNeeded: newValue) }
    }
}

/// Whether the `count` bytes at `left` and `right` are equal.
@inline(__always)
func bytesEqual(_ left: UnsafePointer<UInt8>, _ right: UnsafePointer<UInt8>, count: Int) -> Bool {
    var index = 0
    while index &+ 8 <= count {
        guard
            UnsafeRawPointer(left + index).loadUnaligned(as: UInt64.self)
                == UnsafeRawPointer(right + index).loadUnaligned(as: UInt64.self)
        else { return false }
        index &+= 8
    }
    while index < count {
        guard left[index] == right[index] else { return false }
        index &+= 1
    }
    return true
}

extension JSONParser {
    /// Validates the value starting at `position` (a significant byte) with the checks of
    /// ``parseValue(depth:)``, without building it. `depth` is the nesting depth of the container the
    /// value sits in. Only for parsers whose `maxDepth` is at most ``recursionLimit``.
    mutating func scanValue(depth: Int) throws(JSONError) -> ScannedValue {
        var value = ScannedValue()
        value.start = position
        let byte = base[position]
        switch byte {
        case UInt8(ascii: "{"):
            try checkDepth(depth + 1)
            position += 1
            value.kind = .object
            value.isCompact = try scanObjectMembers(depth: depth + 1)
        case UInt8(ascii: "["):
            try checkDepth(depth + 1)
            position += 1
            value.kind = .array
            value.isCompact = try scanArrayElements(depth: depth + 1)
        case UInt8(ascii: "\""):
            value.kind = .string
            value.flag = try scanString()
            value.isCompact = value.flag
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            value.kind = .bool
            value.flag = true
            value.isCompact = true
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            value.kind = .bool
            value.isCompact = true
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            value.isCompact = true
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            value.kind = .number
            if case .int(let integer) = try parseNumber() {
                value.flag = true
                value.integer = integer
                // Only `-0` is written differently (as `0`).
                value.isCompact = position - value.start == JSONWriter.decimalLength(integer)
            }
        case UInt8(ascii: "N"), UInt8(ascii: "I"):
            throw JSONError(kind: .invalidNumber, offset: position, reason: "NaN and Infinity are not JSON numbers")
        default:
            throw unexpected(at: position, expected: "a value")
        }
        value.end = position
        return value
    }

    /// Skips whitespace, noting in `compact` that there was some, and returns the next byte without consuming it.
    private mutating func peekInside(_ compact: inout Bool) throws(JSONError) -> UInt8 {
        let before = position
        let byte = try peekSignificant()
        if position != before { compact = false }
        return byte
    }

    /// Scans the members of an object after its `{`, up to and including its `}`; returns whether they are compact.
    private mutating func scanObjectMembers(depth: Int) throws(JSONError) -> Bool {
        var compact = true
        if try peekInside(&compact) == UInt8(ascii: "}") {
            position += 1
            return compact
        }
        // The previous member's name, while the names are in the order `encode` writes them (which also makes
        // them unique).
        var previous: Range<Int>? = nil
        while true {
            guard try peekInside(&compact) == UInt8(ascii: "\"") else {
                throw unexpected(at: position, expected: "a member name string")
            }
            let nameStart = position + 1
            if try !scanString() {
                compact = false
            } else if compact {
                let name = nameStart..<position - 1
                if let previous, !sortsBefore(previous, name) { compact = false }
                previous = name
            }
            guard try peekInside(&compact) == UInt8(ascii: ":") else { throw unexpected(at: position, expected: "':'") }
            position += 1
            _ = try peekInside(&compact)
            if try !scanValue(depth: depth).isCompact { compact = false }
            let next = try peekInside(&compact)
            position += 1
            if next == UInt8(ascii: ",") { continue }
            guard next == UInt8(ascii: "}") else {
                position -= 1
                throw unexpected(at: position, expected: "',' or '}'")
            }
            return compact
        }
    }

    /// Scans the elements of an array after its `[`, up to and including its `]`; returns whether they are compact.
    private mutating func scanArrayElements(depth: Int) throws(JSONError) -> Bool {
        var compact = true
        if try peekInside(&compact) == UInt8(ascii: "]") {
            position += 1
            return compact
        }
        while true {
            _ = try peekInside(&compact)
            if try !scanValue(depth: depth).isCompact { compact = false }
            let next = try peekInside(&compact)
            position += 1
            if next == UInt8(ascii: ",") { continue }
            guard next == UInt8(ascii: "]") else {
                position -= 1
                throw unexpected(at: position, expected: "',' or ']'")
            }
            return compact
        }
    }

    /// Validates the string whose opening quote is at `position`, as ``parseString()`` does; returns whether it
    /// is written without escapes.
    mutating func scanString() throws(JSONError) -> Bool {
        let (index, closed) = try plainStringEnd(from: position + 1)
        if closed {
            position = index + 1
            return true
        }
        // Escapes, a control character or the end of the input: the full parser decides.
        _ = try parseString()
        return false
    }
}

extension JSONParser {
    /// Whether the name at `left` comes before the one at `right` in the order of their UTF-8 bytes (the order in
    /// which ``JSONValue/encode(into:)`` writes an object's members).
    fileprivate func sortsBefore(_ left: Range<Int>, _ right: Range<Int>) -> Bool {
        let common = min(left.count, right.count)
        var offset = 0
        while offset < common {
            let a = base[left.lowerBound + offset]
            let b = base[right.lowerBound + offset]
            if a != b { return a < b }
            offset += 1
        }
        return left.count < right.count
    }
}

extension JSONValue {
    /// Whether `bytes` are one JSON value exactly as ``encode(into:)`` writes it, and nothing else, checked with
    /// the checks of parsing but without building the value: a reader of text it wrote itself (a store) can keep the
    /// bytes as they are. True never for what does not parse. False (or an error) for anything else: valid JSON
    /// written otherwise (whitespace, escapes, members out of order), values nested deeper than the scanner's
    /// recursion goes (``JSONParser/recursionLimit``) when `limits` allow more, and text that does not start with
    /// its value; parse those, which names the error of what is not JSON.
    package static func isCompactEncoding(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits) throws(JSONError)
        -> Bool
    {
        let depth = min(limits.maxDepth, JSONLimits.maximumDepth)
        let scanned = JSONLimits(maxDepth: min(depth, JSONParser.recursionLimit), maxBytes: limits.maxBytes)
        var parser = try JSONParser(bytes, limits: scanned)
        guard try parser.peekSignificant() == bytes.first else { return false }
        let value: ScannedValue
        do {
            value = try parser.scanValue(depth: 0)
        } catch  where error.kind == .tooDeep && depth > JSONParser.recursionLimit {
            return false
        }
        try parser.expectEnd()
        return value.isCompact && value.end == bytes.count
    }
}
