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

    /// journald's socket for entries in its native protocol.
    static let journaldSocket = "/run/systemd/journal/socket"

    /// Sends the entry to journald as one datagram, as `sd_journal_sendv(3)` does for an entry that fits one
    /// (an entry larger than the socket's limit fails with `-EMSGSIZE`, and the caller writes it to stderr).
    /// Returns 0 or a negative errno value.
    func sendToJournald() -> Int32 {
        send(toSocketAt: Self.journaldSocket)
    }

    /// Sends the entry in the native protocol as one datagram to the socket at `path`.
    /// Returns 0 or a negative errno value.
    func send(toSocketAt path: String) -> Int32 {
        let datagram = nativeDatagram()
        return datagram.withUnsafeBytes { beacon_unix_datagram_send(path, $0.baseAddress, $0.count) }
    }
}
