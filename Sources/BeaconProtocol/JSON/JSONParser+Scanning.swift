/// Where a scan found one JSON value in its input, and what it learned about it.
struct ScannedValue {
    enum Kind: UInt8 {
        case null, bool, number, string, array, object
    }

    var kind: Kind = .null
    /// The bytes are exactly what ``JSONValue/encode(into:)`` writes for the value: no whitespace, no escapes,
    /// integers only, no member name twice in an object.
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
    /// ``parseValueRecursively(depth:)``, without building it. `depth` is the nesting depth of the container the
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
        var names = NameRanges()
        while true {
            guard try peekInside(&compact) == UInt8(ascii: "\"") else {
                throw unexpected(at: position, expected: "a member name string")
            }
            let nameStart = position + 1
            if try !scanString() {
                compact = false
            } else if compact && !names.insertUnique(base, nameStart, position - 1) {
                compact = false
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

/// The member names of one object seen so far, to find a repeated one; only the first few are kept.
private struct NameRanges {
    private var ranges: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
    private var count = 0
    private static let capacity = 6

    /// Records the name at `start..<end`; returns false when it was seen before or cannot be checked.
    mutating func insertUnique(_ base: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        guard count < Self.capacity else { return false }
        let length = end - start
        let count = self.count
        let unique = withUnsafeBytes(of: &ranges) { raw -> Bool in
            let pairs = raw.bindMemory(to: Int.self)
            for index in 0..<count {
                let otherStart = pairs[2 * index]
                let otherEnd = pairs[2 * index + 1]
                guard otherEnd - otherStart == length else { continue }
                var offset = 0
                while offset < length && base[otherStart + offset] == base[start + offset] { offset += 1 }
                if offset == length { return false }
            }
            return true
        }
        guard unique else { return false }
        withUnsafeMutableBytes(of: &ranges) { raw in
            let pairs = raw.bindMemory(to: Int.self)
            pairs[2 * count] = start
            pairs[2 * count + 1] = end
        }
        self.count += 1
        return true
    }
}
