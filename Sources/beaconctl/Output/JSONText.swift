import BeaconProtocol

/// JSON text for people and scripts: object members sorted by name, so output is stable from run to run.
enum JSONText {
    /// Compact JSON on one line.
    static func compact(_ value: JSONValue) -> String {
        var bytes: [UInt8] = []
        append(value, to: &bytes, indent: nil, level: 0)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Compact JSON of an object given as its members.
    static func compact(_ members: [String: JSONValue]) -> String {
        compact(.object(members))
    }

    /// JSON indented by two spaces per level, for reading.
    static func pretty(_ value: JSONValue) -> String {
        var bytes: [UInt8] = []
        append(value, to: &bytes, indent: 2, level: 0)
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func append(_ value: JSONValue, to bytes: inout [UInt8], indent: Int?, level: Int) {
        switch value {
        case .array(let elements):
            guard !elements.isEmpty else {
                bytes.append(contentsOf: "[]".utf8)
                return
            }
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(&bytes, indent: indent, level: level + 1)
                append(element, to: &bytes, indent: indent, level: level + 1)
            }
            newline(&bytes, indent: indent, level: level)
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else {
                bytes.append(contentsOf: "{}".utf8)
                return
            }
            bytes.append(UInt8(ascii: "{"))
            for (index, name) in members.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(&bytes, indent: indent, level: level + 1)
                JSONWriter.appendString(name, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                if indent != nil { bytes.append(UInt8(ascii: " ")) }
                append(members[name]!, to: &bytes, indent: indent, level: level + 1)
            }
            newline(&bytes, indent: indent, level: level)
            bytes.append(UInt8(ascii: "}"))
        default:
            value.encode(into: &bytes)
        }
    }

    private static func newline(_ bytes: inout [UInt8], indent: Int?, level: Int) {
        guard let indent else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * level))
    }

    /// Parses a command-line argument as JSON; a plain word that is not JSON becomes a JSON string. Text that
    /// starts like JSON's object, array or string (`{`, `[`, `"`) but does not parse is a usage error naming where
    /// it fails: `'{"unterminated'` stored as a string would hide the mistake. `string`: take the text as it is.
    static func value(_ argument: String, what: String = "VALUE", string: Bool = false) throws -> JSONValue {
        if string { return .string(argument) }
        do {
            return try JSONValue(parsing: argument)
        } catch {
            guard let first = argument.utf8.first(where: { !Self.isJSONWhitespace($0) }),
                first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\"")
            else { return .string(argument) }
            throw CommandFailure(
                .usage,
                "\(what) starts like JSON but is not JSON: \(error.reason) "
                    + (error.offset < argument.utf8.count ? "at byte \(error.offset + 1) of " : "at the end of ")
                    + "\(JSONText.compact(.string(argument))) (quote it for the shell; --string stores text as it is)")
        }
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
            || byte == UInt8(ascii: "\r")
    }
}
