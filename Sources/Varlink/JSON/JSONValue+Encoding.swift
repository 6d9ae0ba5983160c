extension JSONValue {
    /// Appends the compact JSON text of this value to `buffer`.
    ///
    /// Strings are escaped as RFC 8259 requires: `"` and `\` with a backslash, control characters as `\n`, `\t`,
    /// … or `\u00XX`; everything else is copied as UTF-8. Non-finite doubles, which JSON cannot express, are
    /// written as `null`.
    public func encode(into buffer: inout [UInt8]) {
        switch self {
        case .null:
            JSONWriter.appendASCII("null", to: &buffer)
        case .bool(let value):
            JSONWriter.appendASCII(value ? "true" : "false", to: &buffer)
        case .int(let value):
            JSONWriter.appendInt(value, to: &buffer)
        case .double(let value):
            JSONWriter.appendDouble(value, to: &buffer)
        case .string(let value):
            JSONWriter.appendString(value, to: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                element.encode(into: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let members):
            JSONWriter.appendObject(members, to: &buffer)
        }
    }

    /// The compact JSON text of this value.
    public var jsonString: String {
        var buffer: [UInt8] = []
        encode(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The size in bytes of the compact JSON text, computed without encoding.
    public var byteSize: Int {
        switch self {
        case .null: return 4
        case .bool(let value): return value ? 4 : 5
        case .int(let value): return JSONWriter.decimalLength(value)
        case .double(let value): return value.isFinite ? value.description.utf8.count : 4
        case .string(let value): return JSONWriter.encodedLength(of: value)
        case .array(let elements):
            var size = 2 + Swift.max(elements.count - 1, 0)
            for element in elements { size += element.byteSize }
            return size
        case .object(let members):
            var size = 2 + Swift.max(members.count - 1, 0)
            for (key, value) in members { size += JSONWriter.encodedLength(of: key) + 1 + value.byteSize }
            return size
        }
    }
}

/// Low-level writers that append JSON text straight into a byte array.
public enum JSONWriter {
    /// Appends the bytes of an ASCII literal.
    @inlinable
    public static func appendASCII(_ literal: StaticString, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends the decimal digits of `value`.
    public static func appendInt(_ value: Int64, to buffer: inout [UInt8]) {
        append(count: decimalLength(value), to: &buffer) { $0.write(int: value) }
    }

    /// Appends `value` in its shortest round-tripping form, or `null` when it is not finite.
    public static func appendDouble(_ value: Double, to buffer: inout [UInt8]) {
        guard value.isFinite else {
            appendASCII("null", to: &buffer)
            return
        }
        buffer.append(contentsOf: value.description.utf8)
    }

    /// Appends `string` as a quoted, escaped JSON string.
    public static func appendString(_ string: String, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        var text = string
        text.withUTF8 { utf8 in
            guard let base = utf8.baseAddress else { return }
            let count = utf8.count
            var runStart = 0
            while true {
                // Runs without anything to escape are copied whole.
                let next = SWAR.firstEscape(base, from: runStart, end: count)
                if runStart < next {
                    buffer.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: next - runStart))
                }
                if next == count { break }
                appendEscape(base[next], to: &buffer)
                runStart = next &+ 1
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Appends `members` as a JSON object.
    ///
    /// Members are written in the order of their names' UTF-8 bytes, so that equal values have equal texts in every
    /// process (a `Dictionary`'s order changes from one process to the next): a value written twice is stored as the
    /// same text, which the daemon takes as no change.
    public static func appendObject(_ members: [String: JSONValue], to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        if members.count == 1, let (key, value) = members.first {
            appendMember(key, value, to: &buffer)
        } else {
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            var first = true
            for (key, value) in sorted {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                appendMember(key, value, to: &buffer)
            }
        }
        buffer.append(UInt8(ascii: "}"))
    }

    private static func appendMember(_ key: String, _ value: JSONValue, to buffer: inout [UInt8]) {
        appendString(key, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        value.encode(into: &buffer)
    }

    private static func appendEscape(_ byte: UInt8, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
        case 0x0A: buffer.append(UInt8(ascii: "n"))
        case 0x0D: buffer.append(UInt8(ascii: "r"))
        case 0x09: buffer.append(UInt8(ascii: "t"))
        case 0x08: buffer.append(UInt8(ascii: "b"))
        case 0x0C: buffer.append(UInt8(ascii: "f"))
        default:
            let hexDigits: StaticString = "0123456789abcdef"
            buffer.append(UInt8(ascii: "u"))
            buffer.append(UInt8(ascii: "0"))
            buffer.append(UInt8(ascii: "0"))
            buffer.append(hexDigits.utf8Start[Int(byte >> 4)])
            buffer.append(hexDigits.utf8Start[Int(byte & 0xF)])
        }
    }

    /// The number of bytes ``appendString(_:to:)`` writes for `string`.
    public static func encodedLength(of string: String) -> Int {
        var length = 2
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09, 0x08, 0x0C: length += 2
            case 0..<0x20: length += 6
            default: length += 1
            }
        }
        return length
    }

    /// The number of bytes ``appendInt(_:to:)`` writes for `value`.
    public static func decimalLength(_ value: Int64) -> Int {
        // Compared with powers of ten rather than divided: this runs for every integer written. A magnitude has
        // at most 19 digits, so the power stays below 10^19, within UInt64.
        let magnitude = value.magnitude
        var digits = 1
        var power: UInt64 = 10
        while digits < 19 && magnitude >= power {
            digits += 1
            power &*= 10
        }
        return value < 0 ? digits + 1 : digits
    }
}
