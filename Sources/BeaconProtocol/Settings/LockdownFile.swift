/// An administrator's lockdown file: keys that clients cannot change, one rule a line.
///
/// ```
/// # A comment; blank lines are ignored.
/// org.example.kiosk.url = "https://example.org"
/// org.example.kiosk.** = true
/// org.example.editor.font-size
/// ```
///
/// A rule is a key or a ``KeyPattern``, optionally followed by `=` and a JSON value: with a value, the rule forces
/// that value on every key it matches; without, it locks them at their default. Space and tab around the key, the
/// `=` and the value are ignored, and a line may end in CR LF.
///
/// A comment is a whole line whose first byte other than space or tab is `#`. There are no comments at the end of
/// a rule: the value runs to the end of the line, so that `#` inside a JSON string needs no escaping (and
/// `key = 1 # note` is refused as not JSON).
///
/// Parsing never fails as a whole: a line that is wrong (an invalid key, `=` with nothing after it, a value that
/// is not JSON or is too large, bytes that are not UTF-8) is skipped with a ``SettingsFileProblem``, and the other
/// lines apply. A key may appear on several lines; every rule is kept, in file order, and the reader decides which
/// wins.
public struct LockdownFile: Sendable {
    /// One line's rule.
    public struct Rule: Sendable, Hashable {
        /// The key (``KeyPattern/isExact``) or pattern locked.
        public var pattern: KeyPattern
        /// The forced value as compact JSON text; `nil` when the rule locks the key at its default.
        public var forcedValue: [UInt8]?
        /// The 1-based line of the rule.
        public var line: Int

        public init(pattern: KeyPattern, forcedValue: [UInt8]? = nil, line: Int = 0) {
            self.pattern = pattern
            self.forcedValue = forcedValue
            self.line = line
        }
    }

    /// The rules, in file order.
    public var rules: [Rule]
    /// The lines skipped, and why.
    public var problems: [SettingsFileProblem]

    public init(rules: [Rule] = [], problems: [SettingsFileProblem] = []) {
        self.rules = rules
        self.problems = problems
    }

    /// Parses the text of a lockdown file; `maxValueSize` bounds a forced value's compact JSON text, in bytes.
    public static func parse(
        _ text: [UInt8], keyLimits: KeyLimits = .default, maxValueSize: Int = 65536
    ) -> LockdownFile {
        var file = LockdownFile()
        for (index, line) in text.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            var content = line
            if content.last == 0x0D { content.removeLast() }
            content = trimmed(content)
            if content.isEmpty || content.first == UInt8(ascii: "#") { continue }
            do throws(LineProblem) {
                let rule = try parseRule(content, keyLimits: keyLimits, maxValueSize: maxValueSize)
                file.rules.append(Rule(pattern: rule.pattern, forcedValue: rule.forcedValue, line: number))
            } catch {
                file.problems.append(SettingsFileProblem(line: number, problem: error.message))
            }
        }
        return file
    }

    private struct LineProblem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// The rule on one line, trimmed and not a comment.
    private static func parseRule(
        _ line: ArraySlice<UInt8>, keyLimits: KeyLimits, maxValueSize: Int
    ) throws(LineProblem) -> (pattern: KeyPattern, forcedValue: [UInt8]?) {
        guard String(validating: line, as: UTF8.self) != nil else { throw LineProblem("not valid UTF-8") }
        let keyEnd = line.firstIndex { isBlank($0) || $0 == UInt8(ascii: "=") } ?? line.endIndex
        guard keyEnd > line.startIndex else { throw LineProblem("expected a key or pattern before \"=\"") }
        let pattern: KeyPattern
        do {
            pattern = try KeyPattern(String(decoding: line[..<keyEnd], as: UTF8.self), limits: keyLimits)
        } catch {
            throw LineProblem(error.description)
        }
        let rest = trimmed(line[keyEnd...])
        guard let first = rest.first else { return (pattern, nil) }
        guard first == UInt8(ascii: "=") else {
            throw LineProblem("expected \"=\" and a JSON value, or the end of the line, after \"\(pattern)\"")
        }
        let valueText = trimmed(rest.dropFirst())
        guard !valueText.isEmpty else {
            throw LineProblem("\"=\" with no value after it (to lock the key at its default, write the key alone)")
        }
        let limits = JSONLimits(maxBytes: Swift.max(JSONLimits.default.maxBytes, maxValueSize))
        let parsed: Result<JSONValue, JSONError> = valueText.withUnsafeBytes { raw in
            Result { () throws(JSONError) in try JSONValue(parsing: raw, limits: limits) }
        }
        let value: JSONValue
        switch parsed {
        case .success(let success):
            value = success
        case .failure(let error) where error.kind == .tooLarge:
            throw LineProblem("the value is larger than the limit of \(maxValueSize) bytes")
        case .failure(let error):
            var message = "not a JSON value: \(error.reason)"
            if error.kind == .trailingData && valueText.contains(UInt8(ascii: "#")) {
                message += " (a comment must be on a line of its own)"
            }
            throw LineProblem(message)
        }
        let size = value.byteSize
        guard size <= maxValueSize else {
            throw LineProblem("the value is \(size) bytes, more than the limit of \(maxValueSize) bytes")
        }
        var compact: [UInt8] = []
        compact.reserveCapacity(size)
        value.encode(into: &compact)
        return (pattern, compact)
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let first = bytes.firstIndex(where: { !isBlank($0) }) else { return bytes[bytes.endIndex...] }
        let last = bytes.lastIndex { !isBlank($0) }!
        return bytes[first...last]
    }
}
