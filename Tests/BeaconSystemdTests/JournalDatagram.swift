/// A reader of journald's native protocol, written independently of the sender to check it.
struct JournalDatagram {
    enum ParseError: Error {
        case truncated(at: Int)
        case missingNewline(at: Int)
    }

    struct Field: Equatable {
        var name: String
        var value: String
        var binary: Bool
    }

    var fields: [Field] = []

    init(_ bytes: [UInt8]) throws {
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") })
            else {
                throw ParseError.truncated(at: index)
            }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                guard let newline = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) else {
                    throw ParseError.missingNewline(at: end)
                }
                fields.append(
                    Field(name: name, value: String(decoding: bytes[(end + 1)..<newline], as: UTF8.self), binary: false)
                )
                index = newline + 1
            } else {
                let lengthStart = end + 1
                guard lengthStart + 8 <= bytes.count else {
                    throw ParseError.truncated(at: lengthStart)
                }
                var length: UInt64 = 0
                for (shift, byte) in bytes[lengthStart..<lengthStart + 8].enumerated() {
                    length |= UInt64(byte) << (8 * UInt64(shift))
                }
                let valueStart = lengthStart + 8
                let valueEnd = valueStart + Int(length)
                guard valueEnd < bytes.count else {
                    throw ParseError.truncated(at: valueStart)
                }
                guard bytes[valueEnd] == UInt8(ascii: "\n") else {
                    throw ParseError.missingNewline(at: valueEnd)
                }
                fields.append(
                    Field(
                        name: name, value: String(decoding: bytes[valueStart..<valueEnd], as: UTF8.self), binary: true))
                index = valueEnd + 1
            }
        }
    }

    /// Every value of the field `name`.
    func values(_ name: String) -> [String] {
        fields.filter { $0.name == name }.map(\.value)
    }

    subscript(name: String) -> String? {
        let found = values(name)
        return found.count == 1 ? found[0] : nil
    }
}
