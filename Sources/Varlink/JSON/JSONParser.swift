/// An iterative JSON parser over a contiguous byte buffer.
///
/// Nesting is tracked on heap-allocated stacks rather than the call stack, so hostile input such as
/// `[[[[…` can only ever cost ``JSONLimits/maxDepth`` frames before it is rejected.
package struct JSONParser {
    private struct Frame {
        var isObject: Bool
        var valueStart: Int
        var keyStart: Int
    }

    let base: UnsafePointer<UInt8>
    let end: Int
    let maxDepth: Int
    var position: Int = 0

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.base = base
        self.end = count
        self.maxDepth = min(maxDepth, JSONLimits.maximumDepth)
    }

    /// A parser over `bytes`, which must stay valid while the parser is used, after checking the size limit.
    package init(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits) throws(JSONError) {
        guard bytes.count <= limits.maxBytes else {
            throw JSONError(
                kind: .tooLarge, offset: limits.maxBytes,
                reason: "input of \(bytes.count) bytes exceeds the limit of \(limits.maxBytes) bytes")
        }
        guard let raw = bytes.baseAddress, bytes.count > 0 else {
            throw JSONError(kind: .unexpectedEnd, offset: 0, reason: "empty input")
        }
        self.init(base: raw.assumingMemoryBound(to: UInt8.self), count: bytes.count, maxDepth: limits.maxDepth)
    }

    // MARK: - Documents

    /// Parses one value and requires that only whitespace follows it.
    mutating func parseDocument() throws(JSONError) -> JSONValue {
        let value = try parseValue(depth: 0)
        try expectEnd()
        return value
    }

    /// Requires that only whitespace remains.
    package mutating func expectEnd() throws(JSONError) {
        skipWhitespace()
        if position < end {
            throw JSONError(
                kind: .trailingData, offset: position,
                reason: "unexpected \(describeByte(at: position)) after the end of the value")
        }
    }

    // MARK: - Low-level access used by message parsers

    mutating func skipWhitespace() {
        while position < end {
            let byte = base[position]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    /// Skips whitespace and returns the next byte without consuming it.
    ///
    /// Inlined up to the first byte: in compact JSON (every message the daemon and the client write) that byte is
    /// already significant, and a call per token was a sixth of the client's cost of reading a Watch reply.
    @inline(__always)
    package mutating func peekSignificant() throws(JSONError) -> UInt8 {
        if position < end {
            let byte = base[position]
            if byte > 0x20 { return byte }
        }
        return try peekSignificantAfterWhitespace()
    }

    /// ``peekSignificant()`` past whitespace, or at the end of the input.
    @inline(never)
    private mutating func peekSignificantAfterWhitespace() throws(JSONError) -> UInt8 {
        skipWhitespace()
        guard position < end else {
            throw JSONError(kind: .unexpectedEnd, offset: position, reason: "unexpected end of input")
        }
        return base[position]
    }

    /// Skips whitespace and consumes `byte`, or throws naming `what` was expected.
    @inline(__always)
    mutating func expect(_ byte: UInt8, _ what: StaticString) throws(JSONError) {
        let next = try peekSignificant()
        guard next == byte else { throw unexpected(at: position, expected: what) }
        position += 1
    }

    // MARK: - Values

    /// Containers nested up to this depth are parsed by bounded recursion (at most this many small stack frames),
    /// deeper ones with explicit heap stacks.
    static let recursionLimit = 100

    /// Parses one complete value starting at the next significant byte. `depth` is the nesting depth of the
    /// container the value sits in (0 at top level).
    ///
    /// Recursive for the first ``recursionLimit`` levels; a container deeper than that is parsed by the iterative
    /// parser, so the recursion stays bounded whatever `maxDepth` allows. Values of usual depth are parsed with no
    /// stack arrays.
    package mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        let byte = try peekSignificant()
        if depth >= JSONParser.recursionLimit && (byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[")) {
            return try parseValueIteratively(depth: depth)
        }
        switch byte {
        case UInt8(ascii: "{"):
            try checkDepth(depth + 1)
            position += 1
            if try peekSignificant() == UInt8(ascii: "}") {
                position += 1
                return .object([:])
            }
            // Eight buckets, room for six members (a change's usual members) without a resize.
            var members = [String: JSONValue](minimumCapacity: 4)
            while true {
                let name = try parseMemberName()
                members[name] = try parseValue(depth: depth + 1)
                let next = try peekSignificant()
                position += 1
                if next == UInt8(ascii: ",") { continue }
                guard next == UInt8(ascii: "}") else {
                    position -= 1
                    throw unexpected(at: position, expected: "',' or '}'")
                }
                return .object(members)
            }
        case UInt8(ascii: "["):
            try checkDepth(depth + 1)
            position += 1
            if try peekSignificant() == UInt8(ascii: "]") {
                position += 1
                return .array([])
            }
            var elements: [JSONValue] = []
            while true {
                elements.append(try parseValue(depth: depth + 1))
                let next = try peekSignificant()
                position += 1
                if next == UInt8(ascii: ",") { continue }
                guard next == UInt8(ascii: "]") else {
                    position -= 1
                    throw unexpected(at: position, expected: "',' or ']'")
                }
                return .array(elements)
            }
        default:
            return try parseScalar(byte)
        }
    }

    /// Parses a value that is not an array or object; `byte` is its first byte, at `position`.
    private mutating func parseScalar(_ byte: UInt8) throws(JSONError) -> JSONValue {
        switch byte {
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "N"), UInt8(ascii: "I"):
            throw JSONError(kind: .invalidNumber, offset: position, reason: "NaN and Infinity are not JSON numbers")
        default:
            throw unexpected(at: position, expected: "a value")
        }
    }

    /// The iterative parser, for containers deeper than ``recursionLimit``: nesting lives on heap stacks.
    mutating func parseValueIteratively(depth outerDepth: Int) throws(JSONError) -> JSONValue {
        // The stacks live only while a deep value is parsed, so that a parser holds no arrays.
        var frames: [Frame] = []
        var pendingValues: [JSONValue] = []
        var pendingKeys: [String] = []

        valueLoop: while true {
            let byte = try peekSignificant()
            var value: JSONValue
            switch byte {
            case UInt8(ascii: "{"):
                try checkDepth(outerDepth + frames.count + 1)
                position += 1
                if try peekSignificant() == UInt8(ascii: "}") {
                    position += 1
                    value = .object([:])
                } else {
                    frames.append(Frame(isObject: true, valueStart: pendingValues.count, keyStart: pendingKeys.count))
                    pendingKeys.append(try parseMemberName())
                    continue valueLoop
                }
            case UInt8(ascii: "["):
                try checkDepth(outerDepth + frames.count + 1)
                position += 1
                if try peekSignificant() == UInt8(ascii: "]") {
                    position += 1
                    value = .array([])
                } else {
                    frames.append(Frame(isObject: false, valueStart: pendingValues.count, keyStart: pendingKeys.count))
                    continue valueLoop
                }
            default:
                value = try parseScalar(byte)
            }

            // A value is complete: attach it to the enclosing containers, closing as many as end here.
            while !frames.isEmpty {
                pendingValues.append(value)
                let frame = frames[frames.count - 1]
                let next = try peekSignificant()
                if frame.isObject {
                    if next == UInt8(ascii: ",") {
                        position += 1
                        pendingKeys.append(try parseMemberName())
                        continue valueLoop
                    }
                    guard next == UInt8(ascii: "}") else { throw unexpected(at: position, expected: "',' or '}'") }
                    position += 1
                    var members: [String: JSONValue] = [:]
                    let count = pendingValues.count - frame.valueStart
                    members.reserveCapacity(count)
                    for index in 0..<count {
                        members[pendingKeys[frame.keyStart + index]] = pendingValues[frame.valueStart + index]
                    }
                    pendingValues.removeSubrange(frame.valueStart...)
                    pendingKeys.removeSubrange(frame.keyStart...)
                    frames.removeLast()
                    value = .object(members)
                } else {
                    if next == UInt8(ascii: ",") {
                        position += 1
                        continue valueLoop
                    }
                    guard next == UInt8(ascii: "]") else { throw unexpected(at: position, expected: "',' or ']'") }
                    position += 1
                    let elements = Array(pendingValues[frame.valueStart...])
                    pendingValues.removeSubrange(frame.valueStart...)
                    frames.removeLast()
                    value = .array(elements)
                }
            }
            return value
        }
    }

    func checkDepth(_ depth: Int) throws(JSONError) {
        if depth > maxDepth {
            throw JSONError(
                kind: .tooDeep, offset: position, reason: "nesting deeper than the limit of \(maxDepth) levels")
        }
    }

    /// Parses `"name" :` inside an object.
    mutating func parseMemberName() throws(JSONError) -> String {
        guard try peekSignificant() == UInt8(ascii: "\"") else {
            throw unexpected(at: position, expected: "a member name string")
        }
        let name = try parseString()
        try expect(UInt8(ascii: ":"), "':'")
        return name
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let count = literal.utf8CodeUnitCount
        let start = literal.utf8Start
        for index in 0..<count {
            guard position + index < end else {
                throw JSONError(kind: .unexpectedEnd, offset: position + index, reason: "input ends inside \(literal)")
            }
            guard base[position + index] == start[index] else {
                throw unexpected(at: position + index, expected: literal)
            }
        }
        position += count
    }

    // MARK: - Strings

    /// Parses a string; `position` is at the opening quote.
    mutating func parseString() throws(JSONError) -> String {
        let start = position + 1
        // Fast path: no escapes. Multi-byte sequences are validated in place.
        let (plainEnd, closed) = try plainStringEnd(from: start)
        if closed {
            position = plainEnd + 1
            return String(decoding: UnsafeBufferPointer(start: base + start, count: plainEnd - start), as: UTF8.self)
        }
        var index = plainEnd
        var scratch = Array(UnsafeBufferPointer(start: base + start, count: index - start))
        while true {
            guard index < end else {
                throw JSONError(kind: .unexpectedEnd, offset: index, reason: "unterminated string")
            }
            let byte = base[index]
            switch byte {
            case UInt8(ascii: "\""):
                position = index + 1
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index = try parseEscape(at: index, into: &scratch)
            case 0..<0x20:
                throw JSONError(
                    kind: .controlCharacter, offset: index,
                    reason: "unescaped control character \(hex(byte)) in a string")
            case 0x80...:
                let next = try endOfUTF8Sequence(at: index)
                scratch.append(contentsOf: UnsafeBufferPointer(start: base + index, count: next - index))
                index = next
            default:
                scratch.append(byte)
                index += 1
            }
        }
    }

    /// Decodes the escape at `index` (a backslash) into `scratch`; returns the index after it.
    private func parseEscape(at index: Int, into scratch: inout [UInt8]) throws(JSONError) -> Int {
        guard index + 1 < end else {
            throw JSONError(kind: .unexpectedEnd, offset: index, reason: "input ends inside an escape")
        }
        let decoded: UInt8
        switch base[index + 1] {
        case UInt8(ascii: "\""): decoded = 0x22
        case UInt8(ascii: "\\"): decoded = 0x5C
        case UInt8(ascii: "/"): decoded = 0x2F
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0C
        case UInt8(ascii: "n"): decoded = 0x0A
        case UInt8(ascii: "r"): decoded = 0x0D
        case UInt8(ascii: "t"): decoded = 0x09
        case UInt8(ascii: "u"):
            var scalar = try parseHex4(at: index + 2)
            var next = index + 6
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                guard next + 1 < end, base[next] == UInt8(ascii: "\\"), base[next + 1] == UInt8(ascii: "u") else {
                    throw JSONError(
                        kind: .invalidUTF8, offset: index,
                        reason: "high surrogate \\u\(hex16(scalar)) without a low one")
                }
                let low = try parseHex4(at: next + 2)
                guard low >= 0xDC00 && low <= 0xDFFF else {
                    throw JSONError(
                        kind: .invalidUTF8, offset: next,
                        reason: "high surrogate \\u\(hex16(scalar)) followed by \\u\(hex16(low)), not a low surrogate")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                next += 6
            } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                throw JSONError(
                    kind: .invalidUTF8, offset: index, reason: "lone low surrogate \\u\(hex16(scalar))")
            }
            appendUTF8(scalar, to: &scratch)
            return next
        default:
            throw JSONError(
                kind: .invalidEscape, offset: index, reason: "unknown escape \\\(describeByte(at: index + 1))")
        }
        scratch.append(decoded)
        return index + 2
    }

    private func parseHex4(at index: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard index + offset < end else {
                throw JSONError(kind: .unexpectedEnd, offset: index + offset, reason: "input ends inside a \\u escape")
            }
            let byte = base[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default:
                throw JSONError(
                    kind: .invalidEscape, offset: index + offset,
                    reason: "\\u escape needs four hex digits, found \(describeByte(at: index + offset))")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private func appendUTF8(_ scalar: UInt32, to scratch: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | (scalar >> 12) & 0x3F))
            scratch.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Finds the end of the plain start of a string whose contents begin at `index`: returns the index of its
    /// closing quote with `closed` true when the string holds no escape or control character, and otherwise the
    /// index of the first escape or control character, or `end`, with `closed` false. Multi-byte UTF-8 sequences
    /// on the way are validated.
    @inline(__always)
    func plainStringEnd(from index: Int) throws(JSONError) -> (index: Int, closed: Bool) {
        var index = index
        while true {
            index = SWAR.firstAttention(base, from: index, end: end)
            guard index < end else { return (index, false) }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") { return (index, true) }
            if byte < 0x80 { return (index, false) }
            index = try endOfUTF8Sequence(at: index)
        }
    }

    /// Validates the multi-byte UTF-8 sequence starting at `index` and returns the index after it.
    func endOfUTF8Sequence(at index: Int) throws(JSONError) -> Int {
        let lead = base[index]
        let length: Int
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondHigh = 0x9F
        case 0xF0:
            length = 4
            secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondHigh = 0x8F
        default:
            throw JSONError(kind: .invalidUTF8, offset: index, reason: "invalid UTF-8 lead byte \(hex(lead))")
        }
        guard index + length <= end else {
            throw JSONError(kind: .invalidUTF8, offset: index, reason: "truncated UTF-8 sequence")
        }
        let second = base[index + 1]
        guard second >= secondLow && second <= secondHigh else {
            throw JSONError(
                kind: .invalidUTF8, offset: index + 1,
                reason: "invalid UTF-8 continuation byte \(hex(second)) after \(hex(lead))")
        }
        var offset = 2
        while offset < length {
            let byte = base[index + offset]
            guard byte & 0xC0 == 0x80 else {
                throw JSONError(
                    kind: .invalidUTF8, offset: index + offset, reason: "invalid UTF-8 continuation byte \(hex(byte))")
            }
            offset += 1
        }
        return index + length
    }

    // MARK: - Numbers

    mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = position
        var index = position
        let negative = base[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < end, isDigit(base[index]) else {
            throw JSONError(kind: .invalidNumber, offset: index, reason: "expected a digit after '-'")
        }
        // Accumulate negatively so that Int64.min fits.
        var accumulator: Int64 = 0
        var overflow = false
        if base[index] == UInt8(ascii: "0") {
            index += 1
            if index < end && isDigit(base[index]) {
                throw JSONError(kind: .invalidNumber, offset: start, reason: "leading zeros are not allowed")
            }
        } else {
            // Eighteen digits cannot overflow: they are read without checks, the rest with them.
            var magnitude: UInt64 = 0
            let uncheckedEnd = min(end, index + 18)
            while index < uncheckedEnd {
                let digit = base[index] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                magnitude = magnitude &* 10 &+ UInt64(digit)
                index += 1
            }
            accumulator = -Int64(magnitude)
            while index < end && isDigit(base[index]) {
                if !overflow {
                    let (shifted, overflow1) = accumulator.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = shifted.subtractingReportingOverflow(Int64(base[index] &- 0x30))
                    if overflow1 || overflow2 { overflow = true } else { accumulator = sum }
                }
                index += 1
            }
        }
        var isInteger = true
        if index < end && base[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < end, isDigit(base[index]) else {
                throw JSONError(kind: .invalidNumber, offset: index, reason: "expected a digit after '.'")
            }
            while index < end && isDigit(base[index]) { index += 1 }
        }
        if index < end && (base[index] == UInt8(ascii: "e") || base[index] == UInt8(ascii: "E")) {
            isInteger = false
            index += 1
            if index < end && (base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-")) { index += 1 }
            guard index < end, isDigit(base[index]) else {
                throw JSONError(kind: .invalidNumber, offset: index, reason: "expected a digit in the exponent")
            }
            while index < end && isDigit(base[index]) { index += 1 }
        }
        position = index
        if isInteger && !overflow {
            if negative { return .int(accumulator) }
            if accumulator != .min { return .int(-accumulator) }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: index - start), as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw JSONError(kind: .invalidNumber, offset: start, reason: "number out of range")
        }
        return .double(number)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    // MARK: - Diagnostics

    func unexpected(at index: Int, expected: StaticString) -> JSONError {
        guard index < end else {
            return JSONError(kind: .unexpectedEnd, offset: index, reason: "input ends where \(expected) was expected")
        }
        if base[index] >= 0x80 {
            do {
                _ = try endOfUTF8Sequence(at: index)
            } catch {
                return error
            }
        }
        return JSONError(kind: .syntax, offset: index, reason: "expected \(expected), found \(describeByte(at: index))")
    }

    private func describeByte(at index: Int) -> String {
        guard index < end else { return "end of input" }
        let byte = base[index]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte \(hex(byte))"
    }
}

private func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    return "0x" + String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
}

private func hex16(_ value: UInt32) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    for shift in stride(from: 12, through: 0, by: -4) { bytes.append(digits[Int((value >> UInt32(shift)) & 0xF)]) }
    return String(decoding: bytes, as: UTF8.self)
}

extension JSONParser {
    /// Consumes the `{` of an object whose members sit at `depth` + 1.
    package mutating func beginObject(depth: Int) throws(JSONError) {
        try begin(UInt8(ascii: "{"), "an object", depth: depth)
    }

    /// Consumes the `[` of an array whose elements sit at `depth` + 1.
    package mutating func beginArray(depth: Int) throws(JSONError) {
        try begin(UInt8(ascii: "["), "an array", depth: depth)
    }

    private mutating func begin(_ opening: UInt8, _ what: StaticString, depth: Int) throws(JSONError) {
        guard try peekSignificant() == opening else { throw unexpected(at: position, expected: what) }
        try checkDepth(depth + 1)
        position += 1
    }

    /// A member name, kept as the input bytes when it is plain ASCII without escapes.
    package struct MemberName {
        fileprivate var raw: UnsafeBufferPointer<UInt8>?
        fileprivate var decoded: String?

        /// The name's bytes, when it is plain ASCII without escapes.
        package var plainBytes: UnsafeBufferPointer<UInt8>? { raw }

        /// Whether the name is plain ASCII without escapes.
        package var isPlain: Bool { raw != nil }

        /// Whether the name is `literal`.
        package func `is`(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            if let raw, let address = raw.baseAddress {
                return raw.count == count && bytesEqual(address, literal.utf8Start, count: count)
            }
            let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
            return decoded.map { $0.utf8.elementsEqual(expected) } ?? false
        }
    }

    /// The next member name of an object opened with ``beginObject(depth:)`` (the caller then parses the value),
    /// or `nil` after the closing `}`. `first` must be `true` for the first call and is updated.
    @inline(__always)
    package mutating func nextMemberName(first: inout Bool) throws(JSONError) -> MemberName? {
        let next = try peekSignificant()
        if first {
            first = false
            if next == UInt8(ascii: "}") {
                position += 1
                return nil
            }
        } else if next == UInt8(ascii: ",") {
            position += 1
        } else {
            guard next == UInt8(ascii: "}") else { throw unexpected(at: position, expected: "',' or '}'") }
            position += 1
            return nil
        }
        guard try peekSignificant() == UInt8(ascii: "\"") else {
            throw unexpected(at: position, expected: "a member name string")
        }
        let start = position + 1
        let index = SWAR.firstAttention(base, from: start, end: end)
        if index < end && base[index] == UInt8(ascii: "\"") {
            position = index + 1
            try expect(UInt8(ascii: ":"), "':'")
            return MemberName(raw: UnsafeBufferPointer(start: base + start, count: index - start), decoded: nil)
        }
        return MemberName(raw: nil, decoded: try parseMemberName())
    }

    /// The next value, when it is an integer; `nil` (with the value skipped) when it is any other value. The same
    /// as `parseValue(depth:).intValue`, without building the ``JSONValue``.
    package mutating func parseInteger(depth: Int) throws(JSONError) -> Int64? {
        let byte = try peekSignificant()
        guard byte == UInt8(ascii: "-") || isDigit(byte) else {
            _ = try parseValue(depth: depth)
            return nil
        }
        return try parseNumber().intValue
    }

    /// The next value, when it is `true` or `false`; `nil` (with the value skipped) when it is any other value.
    package mutating func parseBool(depth: Int) throws(JSONError) -> Bool? {
        switch try peekSignificant() {
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return true
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return false
        default:
            _ = try parseValue(depth: depth)
            return nil
        }
    }

    /// The next value, when it is a string; `nil` (with the value skipped) when it is any other value.
    package mutating func parseStringValue(depth: Int) throws(JSONError) -> String? {
        guard try peekSignificant() == UInt8(ascii: "\"") else {
            _ = try parseValue(depth: depth)
            return nil
        }
        return try parseString()
    }

    /// Whether another element follows in an array opened with ``beginArray(depth:)`` (the caller then parses
    /// it); `false` after the closing `]`. `first` must be `true` for the first call and is updated.
    package mutating func nextElement(first: inout Bool) throws(JSONError) -> Bool {
        let next = try peekSignificant()
        if next == UInt8(ascii: "]") && first {
            position += 1
            return false
        }
        if first {
            first = false
            return true
        }
        position += 1
        if next == UInt8(ascii: ",") { return true }
        guard next == UInt8(ascii: "]") else {
            position -= 1
            throw unexpected(at: position, expected: "',' or ']'")
        }
        return false
    }
}
