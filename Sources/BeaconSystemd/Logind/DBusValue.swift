/// A value read from a D-Bus message, in a shape that maps directly onto JSON.
///
/// - All signed integers (`n`, `i`, `x`) become ``int64``; all unsigned ones (`y`, `q`, `u`, `t`) ``uint64``.
/// - Strings, object paths (`o`) and signatures (`g`) keep their kind: ``string``, ``objectPath``, ``signature``.
/// - Arrays become ``array``; an array of dictionary entries (`a{..}`) becomes ``dict`` with the keys written as
///   text (a string key as is, a number in decimal, a boolean as `true` / `false`).
/// - Structures become ``array`` of their fields. A variant is unwrapped: its content stands in its place.
/// - A Unix file descriptor (`h`) becomes ``unixFD`` with the descriptor number seen in the message (it is not
///   kept open).
public enum DBusValue: Sendable, Hashable, CustomStringConvertible {
    case bool(Bool)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    case unixFD(Int32)
    case array([DBusValue])
    case dict([String: DBusValue])

    /// The value as a `Bool` when it is one.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The text of a ``string``, ``objectPath`` or ``signature``.
    public var stringValue: String? {
        switch self {
        case .string(let value), .objectPath(let value), .signature(let value): return value
        default: return nil
        }
    }

    /// An integer value (signed or unsigned) when it fits into `Int64`.
    public var int64Value: Int64? {
        switch self {
        case .int64(let value): return value
        case .uint64(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// An integer value (signed or unsigned) when it fits into `UInt64`.
    public var uint64Value: UInt64? {
        switch self {
        case .uint64(let value): return value
        case .int64(let value): return UInt64(exactly: value)
        default: return nil
        }
    }

    /// Text of the value as a dictionary key.
    var keyText: String {
        switch self {
        case .bool(let value): return value ? "true" : "false"
        case .int64(let value): return String(value)
        case .uint64(let value): return String(value)
        case .double(let value): return String(value)
        case .string(let value), .objectPath(let value), .signature(let value): return value
        case .unixFD(let value): return String(value)
        case .array, .dict: return description
        }
    }

    public var description: String {
        switch self {
        case .bool(let value): return value ? "true" : "false"
        case .int64(let value): return String(value)
        case .uint64(let value): return String(value)
        case .double(let value): return String(value)
        case .string(let value): return "\"\(value)\""
        case .objectPath(let value): return "o\"\(value)\""
        case .signature(let value): return "g\"\(value)\""
        case .unixFD(let value): return "fd \(value)"
        case .array(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dict(let entries):
            let body = entries.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }
            return "{" + body.joined(separator: ", ") + "}"
        }
    }
}
