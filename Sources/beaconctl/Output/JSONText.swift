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

    /// Parses a command-line argument as JSON; text that is not JSON becomes a JSON string.
    static func valueOrString(_ argument: String) -> JSONValue {
        (try? JSONValue(parsing: argument)) ?? .string(argument)
    }
}
