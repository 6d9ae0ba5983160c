/// How varlink's names become Swift's.
enum SwiftNames {
    static let keywords: Set<String> = [
        "associatedtype", "borrowing", "class", "consuming", "deinit", "enum", "extension", "fileprivate", "func",
        "import", "init", "inout", "internal", "let", "nonisolated", "open", "operator", "private",
        "precedencegroup", "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var",
        "break", "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard", "if",
        "in", "repeat", "return", "throw", "switch", "where", "while", "Any", "as", "await", "false", "is", "nil",
        "self", "Self", "super", "throws", "true", "try", "Type", "Protocol",
    ]

    /// Type names that cannot be nested or would mean something else.
    static let reservedTypeNames: Set<String> = ["Type", "Self", "Protocol", "Any", "Sendable", "Hashable"]

    /// The words of a name: split at `_`, `-` and `.`.
    private static func words(_ name: String) -> [Substring] {
        name.split(whereSeparator: { $0 == "_" || $0 == "-" || $0 == "." })
    }

    /// `client_id` → `clientId`, `Test01` → `test01`, `GetInfo` → `getInfo`, `UUIDString` → `uuidString`.
    static func lowerCamel(_ name: String) -> String {
        let parts = words(name)
        guard let first = parts.first else { return "_" }
        var result = lowerLeadingCapitals(String(first))
        for part in parts.dropFirst() { result += part.prefix(1).uppercased() + part.dropFirst() }
        return result
    }

    /// `client_id` → `ClientId`, `certification` → `Certification`.
    static func upperCamel(_ name: String) -> String {
        let result = words(name).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        return result.isEmpty ? "_" : result
    }

    /// Lowers the leading run of capitals, leaving the last one when a lowercase letter follows it.
    private static func lowerLeadingCapitals(_ word: String) -> String {
        let characters = Array(word)
        var end = 0
        while end < characters.count, characters[end].isUppercase { end += 1 }
        if end == 0 { return word }
        if end > 1, end < characters.count, characters[end].isLowercase { end -= 1 }
        return String(characters[..<end]).lowercased() + String(characters[end...])
    }

    /// `name` as an identifier, in backquotes when it is a keyword.
    static func identifier(_ name: String) -> String {
        keywords.contains(name) ? "`\(name)`" : name
    }

    /// `name` as an argument label at a call: every keyword but `inout`, `var` and `let` stands as it is.
    static func label(_ name: String) -> String {
        ["inout", "var", "let"].contains(name) ? "`\(name)`" : name
    }

    /// `name` as a type declared inside another.
    static func typeName(_ name: String) -> String {
        let camel = upperCamel(name)
        return reservedTypeNames.contains(camel) || keywords.contains(camel) ? camel + "_" : camel
    }

    /// `text` as a Swift string literal, every character that needs it escaped.
    static func stringLiteral(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
