import CSystemd
import CSystemdShims
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One structured journal entry: an ordered list of fields, names already valid for journald.
struct JournalEntry: Sendable, Equatable {
    struct Field: Sendable, Equatable {
        var name: String
        var value: [UInt8]
    }

    private(set) var fields: [Field] = []

    /// Appends a field; `name` must already follow journald's rules (see ``fieldName(_:)``).
    mutating func append(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: Array(value.utf8)))
    }

    /// The longest field name journald accepts.
    static let maximumFieldNameLength = 64

    /// A valid journald field name made from a free-form key: upper-case ASCII letters, digits and `_`,
    /// not starting with `_` (reserved for trusted fields) or a digit, at most 64 characters.
    ///
    /// Lower-case letters are upper-cased, every other character becomes `_`, leading `_` are dropped,
    /// a leading digit gets an `F_` prefix, and an empty result becomes `FIELD`.
    static func fieldName(_ key: String) -> String {
        var scalars: [Character] = key.unicodeScalars.map { scalar in
            switch scalar {
            case "A"..."Z", "0"..."9", "_": Character(scalar)
            case "a"..."z": Character(scalar.properties.uppercaseMapping)
            default: "_"
            }
        }
        while scalars.first == "_" {
            scalars.removeFirst()
        }
        var name = String(scalars)
        if name.isEmpty {
            name = "FIELD"
        } else if let first = name.first, first.isASCII, first.isNumber {
            name = "F_" + name
        }
        return String(name.prefix(maximumFieldNameLength))
    }

    /// The syslog priority (0 emergency … 7 debug) for a swift-log level.
    static func priority(for level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The entry in journald's native protocol: `NAME=value\n` per field, or, for a value containing a
    /// newline, `NAME\n`, the value's length as a 64-bit little-endian integer, the value and `\n`.
    func nativeDatagram() -> [UInt8] {
        var bytes: [UInt8] = []
        for field in fields {
            bytes.append(contentsOf: field.name.utf8)
            if field.value.contains(UInt8(ascii: "\n")) {
                bytes.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(field.value.count).littleEndian) { bytes.append(contentsOf: $0) }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes.append(contentsOf: field.value)
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// Sends the entry to journald with `sd_journal_sendv(3)`. Returns 0 or a negative errno value.
    func sendToJournald() -> Int32 {
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        for field in fields {
            let start = buffer.count
            buffer.append(contentsOf: field.name.utf8)
            buffer.append(UInt8(ascii: "="))
            buffer.append(contentsOf: field.value)
            ranges.append(start..<buffer.count)
        }
        return buffer.withUnsafeMutableBytes { raw -> Int32 in
            guard let base = raw.baseAddress else {
                return -EINVAL
            }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
        }
    }

    /// Sends the entry in the native protocol as one datagram to the socket at `path`.
    /// Returns 0 or a negative errno value.
    func send(toSocketAt path: String) -> Int32 {
        let datagram = nativeDatagram()
        return datagram.withUnsafeBytes { beacon_unix_datagram_send(path, $0.baseAddress, $0.count) }
    }
}
