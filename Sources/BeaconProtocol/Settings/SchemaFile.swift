/// A schema file: JSON text that declares, for keys and key patterns, the values they accept, a default and a
/// description.
///
/// ```json
/// {
///   "keys": {
///     "org.example.editor.font-size": {
///       "type": "integer", "minimum": 6, "maximum": 72,
///       "default": 12,
///       "summary": "Font size",
///       "description": "The size of the editor's text, in points."
///     },
///     "org.example.editor.recent.*": { "type": "string" }
///   }
/// }
/// ```
///
/// Each member of `keys` is a key or a ``KeyPattern``; its value holds the ``JSONSchema`` keywords for the key and,
/// beside them, `default` (exact keys only), `summary` and `description`. An entry without schema keywords accepts
/// any value. The top level may also hold a `$comment`.
///
/// Parsing never fails as a whole: every entry that is wrong is skipped with a ``SettingsFileProblem`` on its line,
/// and the others apply. A key declared twice keeps its first entry: the text is scanned for the positions of the
/// entries, so duplicates are seen even though ``JSONValue`` objects keep only one member of a name.
public struct SchemaFile: Sendable {
    /// The declaration of one key or pattern.
    public struct Entry: Sendable, Hashable {
        /// The key (``KeyPattern/isExact``) or pattern declared.
        public var pattern: KeyPattern
        /// The entry's schema keywords; the empty schema, which accepts anything, when it has none.
        public var schema: JSONSchema
        /// The value of an exact key when nothing set it; it conforms to ``schema``.
        public var defaultValue: JSONValue?
        /// A one-line summary.
        public var summary: String?
        /// A longer description.
        public var description: String?
        /// The line of the entry's name in the file; 0 for a parsed value.
        public var line: Int

        public init(
            pattern: KeyPattern, schema: JSONSchema, defaultValue: JSONValue? = nil, summary: String? = nil,
            description: String? = nil, line: Int = 0
        ) {
            self.pattern = pattern
            self.schema = schema
            self.defaultValue = defaultValue
            self.summary = summary
            self.description = description
            self.line = line
        }
    }

    /// The entries that apply, in file order (by name for a parsed value).
    public var entries: [Entry]
    /// What was skipped, and why.
    public var problems: [SettingsFileProblem]

    public init(entries: [Entry] = [], problems: [SettingsFileProblem] = []) {
        self.entries = entries
        self.problems = problems
    }

    /// Parses the text of a schema file.
    ///
    /// Text that is not JSON gives one problem on the line of the error and no entries. A bad entry gives a problem
    /// on the line of its name and is skipped.
    public static func parse(_ text: [UInt8], keyLimits: KeyLimits = .default) -> SchemaFile {
        var file = SchemaFile()
        do {
            _ = try JSONValue(parsing: text)
        } catch {
            // Past the size limit the offset is the limit's, which says nothing about the text.
            let line = error.kind == .tooLarge ? 0 : LineTable(text).line(of: error.offset)
            file.problems.append(SettingsFileProblem(line: line, problem: "not valid JSON: \(error.reason)"))
            return file
        }

        // The text is valid JSON: what follows scans it for positions, and parses each entry's value on its own.
        let lines = LineTable(text)
        let scanner = JSONPositionScanner(text: text)
        let start = scanner.skipWhitespace(from: 0)
        guard scanner.byte(at: start) == UInt8(ascii: "{") else {
            file.problems.append(
                SettingsFileProblem(line: lines.line(of: start), problem: "expected an object with a \"keys\" member"))
            return file
        }
        var keys: JSONPositionScanner.Member?
        for member in scanner.members(ofObjectAt: start) {
            let name = scanner.name(of: member) ?? ""
            let line = lines.line(of: member.name.lowerBound)
            switch name {
            case "keys":
                if keys == nil {
                    keys = member
                } else {
                    file.problems.append(
                        SettingsFileProblem(line: line, problem: "\"keys\" appears again; the first one applies"))
                }
            case "$comment":
                continue
            default:
                file.problems.append(SettingsFileProblem(line: line, problem: unknownMemberProblem(name)))
            }
        }
        guard let keys else {
            file.problems.append(SettingsFileProblem(line: 0, problem: "no \"keys\" member"))
            return file
        }
        guard scanner.byte(at: keys.value.lowerBound) == UInt8(ascii: "{") else {
            file.problems.append(
                SettingsFileProblem(line: lines.line(of: keys.name.lowerBound), problem: "\"keys\" must be an object"))
            return file
        }
        var firstLines: [String: Int] = [:]
        for member in scanner.members(ofObjectAt: keys.value.lowerBound) {
            let line = lines.line(of: member.name.lowerBound)
            guard let name = scanner.name(of: member), let value = scanner.value(of: member) else {
                // Cannot happen for text that parsed; reported rather than trusted.
                file.problems.append(SettingsFileProblem(line: line, problem: "unreadable entry"))
                continue
            }
            if let firstLine = firstLines[name] {
                file.problems.append(
                    SettingsFileProblem(
                        line: line,
                        problem: "\(JSONValue.string(name)) is declared again; the entry on line \(firstLine) applies"))
                continue
            }
            firstLines[name] = line
            file.add(name: name, value: value, line: line, keyLimits: keyLimits)
        }
        return file
    }

    /// Parses a schema file's content that is already a value (a client's registration): the same format, with
    /// every problem on line 0 and the entries ordered by name.
    public static func parse(_ value: JSONValue, keyLimits: KeyLimits = .default) -> SchemaFile {
        var file = SchemaFile()
        guard case .object(let members) = value else {
            file.problems.append(SettingsFileProblem(line: 0, problem: "expected an object with a \"keys\" member"))
            return file
        }
        for name in members.keys.sorted() where name != "keys" && name != "$comment" {
            file.problems.append(SettingsFileProblem(line: 0, problem: unknownMemberProblem(name)))
        }
        guard let keys = members["keys"] else {
            file.problems.append(SettingsFileProblem(line: 0, problem: "no \"keys\" member"))
            return file
        }
        guard case .object(let entries) = keys else {
            file.problems.append(SettingsFileProblem(line: 0, problem: "\"keys\" must be an object"))
            return file
        }
        for name in entries.keys.sorted() {
            file.add(name: name, value: entries[name]!, line: 0, keyLimits: keyLimits)
        }
        return file
    }

    private static func unknownMemberProblem(_ name: String) -> String {
        "unknown member \(JSONValue.string(name)); a schema file has \"keys\" (and an optional \"$comment\")"
    }

    /// Appends the entry `name: value`, or the problem that keeps it out.
    private mutating func add(name: String, value: JSONValue, line: Int, keyLimits: KeyLimits) {
        do throws(EntryProblem) {
            entries.append(try Self.entry(name: name, value: value, line: line, keyLimits: keyLimits))
        } catch {
            problems.append(SettingsFileProblem(line: line, problem: error.message))
        }
    }

    private struct EntryProblem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    private static func entry(
        name: String, value: JSONValue, line: Int, keyLimits: KeyLimits
    ) throws(EntryProblem) -> Entry {
        let pattern: KeyPattern
        do {
            pattern = try KeyPattern(name, limits: keyLimits)
        } catch {
            throw EntryProblem(error.description)
        }
        let quoted = JSONValue.string(name).jsonString
        guard case .object(var members) = value else {
            throw EntryProblem("\(quoted): expected an object holding the key's schema")
        }
        let defaultValue = members.removeValue(forKey: "default")
        var texts: [String?] = []
        for member in ["summary", "description"] {
            switch members.removeValue(forKey: member) {
            case nil: texts.append(nil)
            case .string(let text)?: texts.append(text)
            case _?: throw EntryProblem("\(quoted): \"\(member)\" must be a string")
            }
        }
        let schema: JSONSchema
        do {
            schema = try JSONSchema(.object(members))
        } catch {
            throw EntryProblem("\(quoted): invalid schema: \(error)")
        }
        if let defaultValue {
            guard pattern.isExact else { throw EntryProblem("\(quoted): a default needs an exact key, not a pattern") }
            if let violation = schema.violation(of: defaultValue) {
                throw EntryProblem("\(quoted): default does not conform: \(violation)")
            }
        }
        return Entry(
            pattern: pattern, schema: schema, defaultValue: defaultValue, summary: texts[0], description: texts[1],
            line: line)
    }
}

/// Byte positions of object members in a JSON text that has already parsed without error, which ``JSONValue``
/// does not keep.
///
/// It only skips: strings to their closing quote (a backslash always takes the byte after it along, so `\"` and
/// `\\` are handled), containers to their matching bracket (ignoring brackets inside strings), scalars to the next
/// delimiter. Every access is bounds-checked, so text that is not JSON gives wrong positions but no crash.
struct JSONPositionScanner {
    /// One member of an object: its name with the quotes, and its value.
    struct Member {
        var name: Range<Int>
        var value: Range<Int>
    }

    let text: [UInt8]

    /// The byte at `offset`, or 0 past the end.
    func byte(at offset: Int) -> UInt8 { offset < text.count ? text[offset] : 0 }

    func skipWhitespace(from offset: Int) -> Int {
        var offset = offset
        while offset < text.count {
            switch text[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return offset
            }
        }
        return offset
    }

    /// The offset just past the string whose opening quote is at `offset`.
    func endOfString(at offset: Int) -> Int {
        var offset = offset + 1
        while offset < text.count {
            switch text[offset] {
            case UInt8(ascii: "\\"): offset += 2
            case UInt8(ascii: "\""): return offset + 1
            default: offset += 1
            }
        }
        return text.count
    }

    /// The offset just past the value that starts at `offset`.
    func endOfValue(at offset: Int) -> Int {
        switch byte(at: offset) {
        case UInt8(ascii: "\""):
            return endOfString(at: offset)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var offset = offset
            while offset < text.count {
                switch text[offset] {
                case UInt8(ascii: "\""):
                    offset = endOfString(at: offset)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return offset + 1 }
                default:
                    break
                }
                offset += 1
            }
            return text.count
        default:
            var offset = offset
            while offset < text.count {
                switch text[offset] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D: return offset
                default: offset += 1
                }
            }
            return offset
        }
    }

    /// The members of the object whose `{` is at `offset`, in text order.
    func members(ofObjectAt offset: Int) -> [Member] {
        var members: [Member] = []
        var offset = skipWhitespace(from: offset + 1)
        while byte(at: offset) == UInt8(ascii: "\"") {
            let nameEnd = endOfString(at: offset)
            let colon = skipWhitespace(from: nameEnd)
            guard byte(at: colon) == UInt8(ascii: ":") else { break }
            let valueStart = skipWhitespace(from: colon + 1)
            let valueEnd = endOfValue(at: valueStart)
            members.append(Member(name: offset..<nameEnd, value: valueStart..<valueEnd))
            let next = skipWhitespace(from: valueEnd)
            guard byte(at: next) == UInt8(ascii: ",") else { break }
            offset = skipWhitespace(from: next + 1)
        }
        return members
    }

    /// The member's name, unescaped.
    func name(of member: Member) -> String? {
        guard member.name.count >= 2 else { return nil }
        let inner = (member.name.lowerBound + 1)..<(member.name.upperBound - 1)
        if !text[inner].contains(UInt8(ascii: "\\")) {
            return String(validating: text[inner], as: UTF8.self)
        }
        return parse(member.name)?.stringValue
    }

    /// The member's value.
    func value(of member: Member) -> JSONValue? { parse(member.value) }

    private func parse(_ range: Range<Int>) -> JSONValue? {
        guard range.lowerBound >= 0, range.upperBound <= text.count, !range.isEmpty else { return nil }
        return text.withUnsafeBytes { raw in try? JSONValue(parsing: UnsafeRawBufferPointer(rebasing: raw[range])) }
    }
}
