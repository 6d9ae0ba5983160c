/// A parsed and checked varlink interface description.
///
/// Accepts the varlink IDL: `interface`, `type`, `method` and `error` declarations, the types `bool`, `int`,
/// `float`, `string`, `object`, named types, `[]T`, `[string]T`, `?T`, anonymous structs and enums, and `#`
/// comments. Checks that names are well formed and unique and that every named type is defined.
public struct VarlinkInterface: Sendable, Hashable {
    /// The interface name, e.g. `io.beacon.Properties`.
    public var name: String
    /// The comment lines above the `interface` line, without `#`.
    public var documentation: String
    public var types: [VarlinkTypeDefinition]
    public var methods: [VarlinkMethod]
    public var errors: [VarlinkErrorDefinition]
    /// The text this interface was parsed from.
    public var text: String

    public init(parsing text: String) throws(VarlinkIDLError) {
        var parser = IDLParser(text: text)
        self = try parser.parseInterface()
    }

    init(
        name: String, documentation: String, types: [VarlinkTypeDefinition], methods: [VarlinkMethod],
        errors: [VarlinkErrorDefinition], text: String
    ) {
        self.name = name
        self.documentation = documentation
        self.types = types
        self.methods = methods
        self.errors = errors
        self.text = text
    }

    /// The method named `name` (unqualified, e.g. `Get`).
    public func method(named name: some StringProtocol) -> VarlinkMethod? {
        methods.first { $0.name == name }
    }

    /// The type defined as `name`.
    public func type(named name: some StringProtocol) -> VarlinkTypeDefinition? {
        types.first { $0.name == name }
    }

    /// The error named `name` (unqualified).
    public func error(named name: some StringProtocol) -> VarlinkErrorDefinition? {
        errors.first { $0.name == name }
    }
}

private struct IDLParser {
    private let text: String
    private let bytes: [UInt8]
    private var index = 0
    private var comments: [String] = []

    init(text: String) {
        self.text = text
        self.bytes = Array(text.utf8)
    }

    mutating func parseInterface() throws(VarlinkIDLError) -> VarlinkInterface {
        skipTrivia()
        let interfaceDocumentation = takeDocumentation()
        try expectKeyword("interface")
        let name = try readWord(what: "an interface name") { byte in
            VarlinkNames.isLetter(byte) || VarlinkNames.isDigit(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "-")
        }
        guard VarlinkNames.isValidInterfaceName(name.text) else {
            throw error(at: name.start, "invalid interface name \"\(name.text)\"")
        }
        var types: [VarlinkTypeDefinition] = []
        var methods: [VarlinkMethod] = []
        var errors: [VarlinkErrorDefinition] = []
        var memberNames: Set<String> = []
        var references: [(name: String, at: Int)] = []

        while true {
            skipTrivia()
            guard index < bytes.count else { break }
            let documentation = takeDocumentation()
            let keyword = try readWord(what: "'type', 'method' or 'error'") { VarlinkNames.isLetter($0) }
            let memberName = try readMemberName()
            guard memberNames.insert(memberName.text).inserted else {
                throw error(at: memberName.start, "\"\(memberName.text)\" is declared twice")
            }
            switch keyword.text {
            case "type":
                let type = try parseStructOrEnum(references: &references)
                types.append(VarlinkTypeDefinition(name: memberName.text, type: type, documentation: documentation))
            case "method":
                let input = try parseStruct(references: &references)
                skipTrivia()
                guard matches("->") else { throw error(at: index, "expected '->' after the method's input") }
                index += 2
                let output = try parseStruct(references: &references)
                methods.append(
                    VarlinkMethod(name: memberName.text, input: input, output: output, documentation: documentation))
            case "error":
                let parameters = try parseStruct(references: &references)
                errors.append(
                    VarlinkErrorDefinition(name: memberName.text, parameters: parameters, documentation: documentation))
            default:
                throw error(at: keyword.start, "expected 'type', 'method' or 'error', found \"\(keyword.text)\"")
            }
        }
        guard !methods.isEmpty || !types.isEmpty || !errors.isEmpty else {
            throw error(at: index, "the interface declares no members")
        }
        let typeNames = Set(types.map(\.name))
        for reference in references where !typeNames.contains(reference.name) {
            throw error(at: reference.at, "unknown type \"\(reference.name)\"")
        }
        return VarlinkInterface(
            name: name.text, documentation: interfaceDocumentation, types: types, methods: methods, errors: errors,
            text: text)
    }

    // MARK: - Types

    private mutating func parseStruct(references: inout [(name: String, at: Int)]) throws(VarlinkIDLError)
        -> [VarlinkField]
    {
        let start = index
        let type = try parseStructOrEnum(references: &references)
        switch type {
        case .structure(let fields): return fields
        case .enumeration(let cases) where cases.isEmpty: return []
        default: throw error(at: start, "expected a struct (name: type, …), found an enum")
        }
    }

    /// Parses `( … )` as a struct or, when the first entry has no `:`, as an enum.
    private mutating func parseStructOrEnum(references: inout [(name: String, at: Int)]) throws(VarlinkIDLError)
        -> VarlinkType
    {
        return try parseStructOrEnum(references: &references, nesting: 0)
    }

    private mutating func parseStructOrEnum(references: inout [(name: String, at: Int)], nesting: Int)
        throws(VarlinkIDLError) -> VarlinkType
    {
        guard nesting < 32 else { throw error(at: index, "types nested too deeply") }
        skipTrivia()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "(") else { throw error(at: index, "expected '('") }
        index += 1
        skipTrivia()
        if index < bytes.count && bytes[index] == UInt8(ascii: ")") {
            index += 1
            return .structure([])
        }
        var fields: [VarlinkField] = []
        var cases: [String] = []
        var isEnum: Bool?
        var seen: Set<String> = []
        while true {
            let fieldName = try readFieldName()
            guard seen.insert(fieldName.text).inserted else {
                throw error(at: fieldName.start, "\"\(fieldName.text)\" appears twice")
            }
            skipTrivia()
            let hasType = index < bytes.count && bytes[index] == UInt8(ascii: ":")
            if isEnum == nil { isEnum = !hasType }
            if isEnum == true {
                guard !hasType else { throw error(at: index, "an enum's values have no types") }
                cases.append(fieldName.text)
            } else {
                guard hasType else { throw error(at: index, "expected ':' and a type after \"\(fieldName.text)\"") }
                index += 1
                let type = try parseType(references: &references, nesting: nesting)
                fields.append(VarlinkField(name: fieldName.text, type: type))
            }
            skipTrivia()
            guard index < bytes.count else { throw error(at: index, "expected ',' or ')'") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: ")") else { throw error(at: index, "expected ',' or ')'") }
            index += 1
            return isEnum == true ? .enumeration(cases) : .structure(fields)
        }
    }

    private mutating func parseType(references: inout [(name: String, at: Int)], nesting: Int)
        throws(VarlinkIDLError) -> VarlinkType
    {
        skipTrivia()
        guard index < bytes.count else { throw error(at: index, "expected a type") }
        if bytes[index] == UInt8(ascii: "?") {
            index += 1
            skipTrivia()
            if index < bytes.count && bytes[index] == UInt8(ascii: "?") {
                throw error(at: index, "'?' cannot be repeated")
            }
            return .optional(try parseElementType(references: &references, nesting: nesting))
        }
        return try parseElementType(references: &references, nesting: nesting)
    }

    private mutating func parseElementType(references: inout [(name: String, at: Int)], nesting: Int)
        throws(VarlinkIDLError) -> VarlinkType
    {
        guard nesting < 32 else { throw error(at: index, "types nested too deeply") }
        skipTrivia()
        guard index < bytes.count else { throw error(at: index, "expected a type") }
        if matches("[]") {
            index += 2
            return .array(try parseType(references: &references, nesting: nesting + 1))
        }
        if matches("[string]") {
            index += 8
            return .dictionary(try parseType(references: &references, nesting: nesting + 1))
        }
        if bytes[index] == UInt8(ascii: "(") {
            return try parseStructOrEnum(references: &references, nesting: nesting + 1)
        }
        let word = try readWord(what: "a type") { VarlinkNames.isLetter($0) || VarlinkNames.isDigit($0) }
        switch word.text {
        case "bool": return .bool
        case "int": return .int
        case "float": return .float
        case "string": return .string
        case "object": return .object
        default:
            guard VarlinkNames.isValidMemberName(word.text) else {
                throw error(at: word.start, "unknown type \"\(word.text)\"")
            }
            references.append((word.text, word.start))
            return .named(word.text)
        }
    }

    // MARK: - Lexical

    private mutating func readMemberName() throws(VarlinkIDLError) -> (text: String, start: Int) {
        let word = try readWord(what: "a name") { VarlinkNames.isLetter($0) || VarlinkNames.isDigit($0) }
        guard VarlinkNames.isValidMemberName(word.text) else {
            throw error(
                at: word.start, "\"\(word.text)\" is not a valid name (an uppercase letter, then letters and digits)")
        }
        return word
    }

    private mutating func readFieldName() throws(VarlinkIDLError) -> (text: String, start: Int) {
        let word = try readWord(what: "a field name") {
            VarlinkNames.isLetter($0) || VarlinkNames.isDigit($0) || $0 == UInt8(ascii: "_")
        }
        guard VarlinkNames.isValidFieldName(word.text) else {
            throw error(at: word.start, "\"\(word.text)\" is not a valid field name")
        }
        return word
    }

    private mutating func expectKeyword(_ keyword: String) throws(VarlinkIDLError) {
        let word = try readWord(what: "'\(keyword)'") { VarlinkNames.isLetter($0) }
        guard word.text == keyword else { throw error(at: word.start, "expected '\(keyword)', found \"\(word.text)\"") }
    }

    private mutating func readWord(what: String, _ accept: (UInt8) -> Bool) throws(VarlinkIDLError)
        -> (text: String, start: Int)
    {
        skipTrivia()
        let start = index
        while index < bytes.count && accept(bytes[index]) { index += 1 }
        guard index > start else {
            if index >= bytes.count { throw error(at: index, "expected \(what), found the end of the text") }
            throw error(at: index, "expected \(what)")
        }
        return (String(decoding: bytes[start..<index], as: UTF8.self), start)
    }

    private func matches(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
        return true
    }

    /// Skips whitespace and comments, collecting the comment lines as documentation.
    private mutating func skipTrivia() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                index += 1
            case UInt8(ascii: "\n"):
                index += 1
                // A blank line ends a documentation block.
                var lookahead = index
                while lookahead < bytes.count && (bytes[lookahead] == UInt8(ascii: " ") || bytes[lookahead] == 9) {
                    lookahead += 1
                }
                if lookahead < bytes.count && bytes[lookahead] == UInt8(ascii: "\n") { comments.removeAll() }
            case UInt8(ascii: "#"):
                var end = index + 1
                while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
                var line = bytes[(index + 1)..<end]
                if line.first == UInt8(ascii: " ") { line = line.dropFirst() }
                comments.append(String(decoding: line, as: UTF8.self))
                index = end
            default:
                return
            }
        }
    }

    private mutating func takeDocumentation() -> String {
        defer { comments.removeAll() }
        return comments.joined(separator: "\n")
    }

    private func error(at offset: Int, _ reason: String) -> VarlinkIDLError {
        var line = 1
        var lineStart = 0
        for position in 0..<min(offset, bytes.count) where bytes[position] == UInt8(ascii: "\n") {
            line += 1
            lineStart = position + 1
        }
        let column = String(decoding: bytes[lineStart..<min(offset, bytes.count)], as: UTF8.self).count + 1
        return VarlinkIDLError(line: line, column: column, reason: reason)
    }
}
