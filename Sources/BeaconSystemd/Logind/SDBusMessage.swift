import CSystemd

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

enum SDBusErrno {
    static func text(_ code: Int32) -> String {
        String(cString: strerror(code < 0 ? -code : code))
    }
}

/// An argument appended to an outgoing method call.
enum SDBusArgument: Sendable, Hashable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case uint32(UInt32)

    var typeCode: CChar {
        switch self {
        case .string: return CChar(UInt8(ascii: "s"))
        case .objectPath: return CChar(UInt8(ascii: "o"))
        case .bool: return CChar(UInt8(ascii: "b"))
        case .uint32: return CChar(UInt8(ascii: "u"))
        }
    }
}

/// A view of an `sd_bus_message` that is valid while sd-bus keeps the message alive (inside a callback, or while
/// the owner holds its reference). Used only on the bus's loop.
struct SDBusMessage {
    let pointer: OpaquePointer

    var member: String? { sd_bus_message_get_member(pointer).map { String(cString: $0) } }
    var path: String? { sd_bus_message_get_path(pointer).map { String(cString: $0) } }
    var interface: String? { sd_bus_message_get_interface(pointer).map { String(cString: $0) } }
    var sender: String? { sd_bus_message_get_sender(pointer).map { String(cString: $0) } }

    /// The error carried by a method error reply, `nil` for anything else.
    var error: DBusError? {
        guard sd_bus_message_is_method_error(pointer, nil) > 0 else { return nil }
        guard let raw = sd_bus_message_get_error(pointer) else {
            return DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "error reply")
        }
        let name = raw.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        let message = raw.pointee.message.map { String(cString: $0) } ?? ""
        return DBusError(name: name, message: message)
    }

    func append(_ argument: SDBusArgument) throws(DBusError) {
        let type = argument.typeCode
        let result: Int32
        switch argument {
        case .string(let text), .objectPath(let text):
            result = text.withCString { sd_bus_message_append_basic(pointer, type, $0) }
        case .bool(let flag):
            var value: Int32 = flag ? 1 : 0
            result = sd_bus_message_append_basic(pointer, type, &value)
        case .uint32(let number):
            var value = number
            result = sd_bus_message_append_basic(pointer, type, &value)
        }
        if result < 0 { throw DBusError(errno: result, "appending an argument") }
    }

    /// Reads every remaining value of the current container (the message body at the top level).
    func readAll() throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = try readNext() {
            values.append(value)
        }
        return values
    }

    /// Reads the next complete value, or `nil` at the end of the current container.
    func readNext() throws(DBusError) -> DBusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>? = nil
        let peeked = sd_bus_message_peek_type(pointer, &type, &contents)
        if peeked < 0 { throw DBusError(errno: peeked, "reading a message") }
        if peeked == 0 { return nil }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "b"):
            let raw: Int32 = try readBasic(type, 0)
            return .bool(raw != 0)
        case UInt8(ascii: "y"): return .uint64(UInt64(try readBasic(type, UInt8(0))))
        case UInt8(ascii: "n"): return .int64(Int64(try readBasic(type, Int16(0))))
        case UInt8(ascii: "q"): return .uint64(UInt64(try readBasic(type, UInt16(0))))
        case UInt8(ascii: "i"): return .int64(Int64(try readBasic(type, Int32(0))))
        case UInt8(ascii: "u"): return .uint64(UInt64(try readBasic(type, UInt32(0))))
        case UInt8(ascii: "x"): return .int64(try readBasic(type, Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try readBasic(type, UInt64(0)))
        case UInt8(ascii: "d"): return .double(try readBasic(type, Double(0)))
        case UInt8(ascii: "h"): return .unixFD(try readBasic(type, Int32(-1)))
        case UInt8(ascii: "s"): return .string(try readText(type))
        case UInt8(ascii: "o"): return .objectPath(try readText(type))
        case UInt8(ascii: "g"): return .signature(try readText(type))
        case UInt8(ascii: "v"):
            try enter(type, contents)
            let inner = try readNext()
            try exit()
            return inner ?? .array([])
        case UInt8(ascii: "r"):
            try enter(type, contents)
            let fields = try readAll()
            try exit()
            return .array(fields)
        case UInt8(ascii: "a"):
            let isDict = contents.map { $0.pointee == CChar(UInt8(ascii: "{")) } ?? false
            try enter(type, contents)
            defer { _ = sd_bus_message_exit_container(pointer) }
            if isDict {
                return .dict(try readDictEntries())
            }
            return .array(try readAll())
        default:
            throw DBusError(
                name: "org.freedesktop.DBus.Error.InvalidSignature",
                message: "unexpected type code \(UInt8(bitPattern: type))"
            )
        }
    }

    /// Reads the body of a `Properties.Get` reply (one variant) or of a `GetAll` reply (`a{sv}`).
    func readProperties() throws(DBusError) -> [String: DBusValue] {
        guard case .dict(let entries)? = try readNext() else {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "expected a{sv}")
        }
        return entries
    }

    private func readDictEntries() throws(DBusError) -> [String: DBusValue] {
        var entries: [String: DBusValue] = [:]
        while true {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>? = nil
            let peeked = sd_bus_message_peek_type(pointer, &type, &contents)
            if peeked < 0 { throw DBusError(errno: peeked, "reading a dictionary") }
            if peeked == 0 { return entries }
            try enter(type, contents)
            let key = try readNext()
            let value = try readNext()
            try exit()
            if let key, let value {
                entries[key.keyText] = value
            }
        }
    }

    private func readBasic<T>(_ type: CChar, _ initial: T) throws(DBusError) -> T {
        var value = initial
        let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(pointer, type, $0) }
        if result < 0 { throw DBusError(errno: result, "reading a value") }
        return value
    }

    private func readText(_ type: CChar) throws(DBusError) -> String {
        var text: UnsafePointer<CChar>? = nil
        let result = sd_bus_message_read_basic(pointer, type, &text)
        if result < 0 { throw DBusError(errno: result, "reading a string") }
        return text.map { String(cString: $0) } ?? ""
    }

    private func enter(_ type: CChar, _ contents: UnsafePointer<CChar>?) throws(DBusError) {
        let result = sd_bus_message_enter_container(pointer, type, contents)
        if result < 0 { throw DBusError(errno: result, "entering a container") }
    }

    private func exit() throws(DBusError) {
        let result = sd_bus_message_exit_container(pointer)
        if result < 0 { throw DBusError(errno: result, "leaving a container") }
    }
}
