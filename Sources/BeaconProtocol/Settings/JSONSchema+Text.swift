extension JSONSchema {
    /// ``violation(of:)`` for a value given as JSON text that a JSON parser accepted, as the daemon stores values
    /// (the call parser checked them). For any other text the answer means nothing.
    ///
    /// Common values are checked on the text itself, without building a ``JSONValue``: a Set of a typed key then
    /// costs a walk over its bytes. Whatever the walk cannot settle (`enum` and `const`, strings with escapes, numbers
    /// beyond 18 digits) and every value that does not conform goes through ``violation(of:)``, which has the last
    /// word and the message.
    package func violation(ofValidJSON text: [UInt8]) -> String? {
        let conforms = text.withUnsafeBufferPointer { buffer -> Bool in
            var walker = SchemaTextWalker(buffer)
            // Valid JSON text holds one value: nothing but white space can follow it.
            return walker.conforms(to: root) == true
        }
        if conforms { return nil }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text, limits: JSONLimits(maxDepth: JSONLimits.maximumDepth, maxBytes: .max))
        } catch {
            return "not JSON: \(error)"
        }
        return violation(of: value)
    }
}

/// Walks valid JSON text alongside a schema. Answers `true` only when the value surely conforms; `false` or `nil`
/// (cannot tell) send the caller to the parsed path. It trusts the text to be JSON: values it skips are not checked.
struct SchemaTextWalker {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        skipSpace()
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipSpace() {
        while position < bytes.count,
            bytes[position] == 0x20 || bytes[position] == 0x0A || bytes[position] == 0x0D || bytes[position] == 0x09
        {
            position += 1
        }
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[position + offset] != text.utf8Start[offset] { return false }
        position += count
        return true
    }

    /// Whether the value at the current position conforms to `node`; moves past it.
    mutating func conforms(to node: SchemaNode) -> Bool? {
        if node.allowedValues != nil { return nil }
        guard let first = current else { return nil }
        switch first {
        case UInt8(ascii: "n"):
            guard literal("null") else { return nil }
            return node.typeMask == 0 || node.typeMask & SchemaType.null.bit != 0
        case UInt8(ascii: "t"):
            guard literal("true") else { return nil }
            return node.typeMask == 0 || node.typeMask & SchemaType.boolean.bit != 0
        case UInt8(ascii: "f"):
            guard literal("false") else { return nil }
            return node.typeMask == 0 || node.typeMask & SchemaType.boolean.bit != 0
        case UInt8(ascii: "\""):
            guard node.typeMask == 0 || node.typeMask & SchemaType.string.bit != 0 else { return false }
            return string(node)
        case UInt8(ascii: "["):
            guard node.typeMask == 0 || node.typeMask & SchemaType.array.bit != 0 else { return false }
            return array(node)
        case UInt8(ascii: "{"):
            guard node.typeMask == 0 || node.typeMask & SchemaType.object.bit != 0 else { return false }
            return object(node)
        default:
            return number(node)
        }
    }

    /// A string: its length in Unicode scalars is its count of bytes that do not continue a UTF-8 sequence.
    private mutating func string(_ node: SchemaNode) -> Bool? {
        guard let base = bytes.baseAddress else { return nil }
        let start = position + 1
        let end = SWAR.firstEscape(base, from: start, end: bytes.count)
        // An escape (or a control character, or no end) takes the parsed path.
        guard end < bytes.count, base[end] == UInt8(ascii: "\"") else { return nil }
        position = end + 1
        let count = end - start
        // A string of n bytes has between n / 4 and n scalars: most bounds are settled without counting.
        let maxSettled = node.maxLength.map { count <= $0 } ?? true
        let minSettled = node.minLength.map { (count + 3) / 4 >= $0 } ?? true
        if maxSettled && minSettled { return true }
        let scalars = count - Self.continuationBytes(base, from: start, end: end)
        if let minLength = node.minLength, scalars < minLength { return false }
        if let maxLength = node.maxLength, scalars > maxLength { return false }
        return true
    }

    /// How many bytes in `start..<end` continue a UTF-8 sequence (`10xxxxxx`), eight at a time.
    private static func continuationBytes(_ base: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        var count = 0
        var index = start
        while index &+ 8 <= end {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            // Bit 7 set and bit 6 (shifted into bit 7's place) clear.
            count &+= (word & ~(word << 1) & 0x8080_8080_8080_8080).nonzeroBitCount
            index &+= 8
        }
        while index < end {
            if base[index] & 0xC0 == 0x80 { count &+= 1 }
            index &+= 1
        }
        return count
    }

    private mutating func number(_ node: SchemaNode) -> Bool? {
        let start = position
        var integral = true
        var digits = 0
        if current == UInt8(ascii: "-") { position += 1 }
        scan: while let byte = current {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
            // A fraction or an exponent (whose sign may be "-" too).
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-"):
                integral = false
            default: break scan
            }
            position += 1
        }
        // Integers of up to 18 digits fit Int64; anything else (a fraction, an exponent) takes the parsed path.
        guard integral, digits > 0, digits <= 18 else { return nil }
        var value: Int64 = 0
        for index in start..<position where bytes[index] != UInt8(ascii: "-") {
            value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
        }
        if bytes[start] == UInt8(ascii: "-") { value = -value }
        let numberBits = SchemaType.integer.bit | SchemaType.number.bit
        guard node.typeMask == 0 || node.typeMask & numberBits != 0 else { return false }
        let number = SchemaNumber.int(value)
        if let minimum = node.minimum, number.compare(minimum) < 0 { return false }
        if let maximum = node.maximum, number.compare(maximum) > 0 { return false }
        if let exclusiveMinimum = node.exclusiveMinimum, number.compare(exclusiveMinimum) <= 0 { return false }
        if let exclusiveMaximum = node.exclusiveMaximum, number.compare(exclusiveMaximum) >= 0 { return false }
        return true
    }

    private mutating func array(_ node: SchemaNode) -> Bool? {
        position += 1
        skipSpace()
        var count = 0
        if current == UInt8(ascii: "]") {
            position += 1
        } else {
            while true {
                skipSpace()
                if let items = node.items {
                    guard let conforms = conforms(to: items) else { return nil }
                    if !conforms { return false }
                } else {
                    guard skipValue() else { return nil }
                }
                count += 1
                skipSpace()
                guard let byte = current else { return nil }
                position += 1
                if byte == UInt8(ascii: "]") { break }
                guard byte == UInt8(ascii: ",") else { return nil }
            }
        }
        if let minItems = node.minItems, count < minItems { return false }
        if let maxItems = node.maxItems, count > maxItems { return false }
        return true
    }

    private mutating func object(_ node: SchemaNode) -> Bool? {
        position += 1
        skipSpace()
        // Which required members were seen, by their index in `required`.
        guard node.required.count <= 64 else { return nil }
        var seen: UInt64 = 0
        if current == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                skipSpace()
                guard current == UInt8(ascii: "\""), let name = memberName() else { return nil }
                skipSpace()
                guard current == UInt8(ascii: ":") else { return nil }
                position += 1
                skipSpace()
                if node.requiresUndeclared {
                    for (index, required) in node.requiredUTF8.enumerated() where Self.equal(required, name) {
                        seen |= 1 << UInt64(index)
                    }
                }
                var declared: Int?
                for index in node.propertyNamesUTF8.indices where Self.equal(node.propertyNamesUTF8[index], name) {
                    declared = index
                    seen |= node.propertyRequiredBits[index]
                    break
                }
                if let declared {
                    guard let conforms = conforms(to: node.properties[declared].node) else { return nil }
                    if !conforms { return false }
                } else {
                    switch node.additionalProperties {
                    case .allowed:
                        guard skipValue() else { return nil }
                    case .forbidden:
                        return false
                    case .schema(let additional):
                        guard let conforms = conforms(to: additional) else { return nil }
                        if !conforms { return false }
                    }
                }
                skipSpace()
                guard let byte = current else { return nil }
                position += 1
                if byte == UInt8(ascii: "}") { break }
                guard byte == UInt8(ascii: ",") else { return nil }
            }
        }
        let all: UInt64 = node.required.count == 64 ? .max : (1 << UInt64(node.required.count)) - 1
        return seen & all == all
    }

    /// The bytes of a member name without escapes; `nil` for one with escapes (the parsed path decodes those).
    private mutating func memberName() -> UnsafeBufferPointer<UInt8>? {
        guard let base = bytes.baseAddress else { return nil }
        let start = position + 1
        let end = SWAR.firstEscape(base, from: start, end: bytes.count)
        guard end < bytes.count, base[end] == UInt8(ascii: "\"") else { return nil }
        position = end + 1
        return UnsafeBufferPointer(start: base + start, count: end - start)
    }

    private static func equal(_ name: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        name.count == bytes.count && name.withUnsafeBufferPointer { $0.elementsEqual(bytes) }
    }

    /// Moves past one value of any kind; false when the text is not what a value looks like.
    private mutating func skipValue() -> Bool {
        var depth = 0
        repeat {
            skipSpace()
            guard let byte = current else { return false }
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                position += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { return false }
                depth -= 1
                position += 1
            case UInt8(ascii: "\""):
                position += 1
                while let inner = current, inner != UInt8(ascii: "\"") {
                    position += inner == UInt8(ascii: "\\") ? 2 : 1
                }
                guard current != nil else { return false }
                position += 1
            case UInt8(ascii: ","), UInt8(ascii: ":"):
                guard depth > 0 else { return false }
                position += 1
            default:
                // A literal or a number: up to the next delimiter.
                let start = position
                while let inner = current, inner != UInt8(ascii: ","), inner != UInt8(ascii: "}"),
                    inner != UInt8(ascii: "]"), inner != UInt8(ascii: ":"), inner > 0x20
                {
                    position += 1
                }
                guard position > start else { return false }
            }
        } while depth > 0
        return true
    }
}
