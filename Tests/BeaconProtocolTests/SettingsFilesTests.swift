import Testing

@testable import BeaconProtocol

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite("schema files")
struct SchemaFileTests {
    @Test func entriesWithTheirLines() throws {
        let text = """
            {
              "$comment": "Editor settings",
              "keys": {
                "org.example.editor.font-size": {
                  "type": "integer", "minimum": 6, "maximum": 72,
                  "default": 12,
                  "summary": "Font size",
                  "description": "The size of the editor's text, in points."
                },
                "org.example.editor.recent.*": { "type": "string" },
                "org.example.editor.anything": {}
              }
            }
            """
        let file = SchemaFile.parse(bytes(text))
        #expect(file.problems == [])
        try #require(file.entries.count == 3)
        let size = file.entries[0]
        #expect(size.pattern.rawValue == "org.example.editor.font-size" && size.pattern.isExact)
        #expect(size.line == 4)
        #expect(size.defaultValue == 12)
        #expect(size.summary == "Font size")
        #expect(size.description == "The size of the editor's text, in points.")
        #expect(size.schema.json == ["type": "integer", "minimum": 6, "maximum": 72])
        #expect(size.schema.typeSummary == "integer 6...72")
        #expect(size.schema.violation(of: 80) == "80 is above the maximum 72")

        let recent = file.entries[1]
        #expect(recent.pattern.rawValue == "org.example.editor.recent.*" && !recent.pattern.isExact)
        #expect(recent.line == 10)
        #expect(recent.defaultValue == nil && recent.summary == nil && recent.description == nil)
        #expect(recent.schema.typeSummary == "string")

        let anything = file.entries[2]
        #expect(anything.line == 11)
        #expect(anything.schema.typeSummary == "any")
        #expect(anything.schema.violation(of: ["x": [nil]]) == nil)
    }

    @Test func linesWithCRLFAndEscapedQuotes() {
        // Strings before and inside the entries hold escaped quotes, backslashes, braces and line-like escapes that
        // a naive search would trip on; the lines end in CR LF.
        let lines = [
            #"{"#,
            #"  "$comment": "a \"quoted\" } { [ \\\" text\\\\", "#,
            #"  "keys": {"#,
            #"    "a.b": {"description": "x \" \\\"c.d\": {\n"},"#,
            "",
            #"    "c.d": {"summary": "}}]]"},"#,
            #"    "e\u002ef": {}"#,
            #"  }"#,
            #"}"#,
        ]
        let file = SchemaFile.parse(bytes(lines.joined(separator: "\r\n")))
        #expect(file.problems == [])
        #expect(file.entries.map(\.pattern.rawValue) == ["a.b", "c.d", "e.f"])
        #expect(file.entries.map(\.line) == [4, 6, 7])
        #expect(file.entries.first?.description == "x \" \\\"c.d\": {\n")
        #expect(file.entries.dropFirst().first?.summary == "}}]]")
    }

    @Test func aBadEntryIsSkippedAlone() throws {
        let text = """
            {"keys": {
              "good.one": {"type": "string"},
              "bad.one": {"type": "integer", "minimum": "six"},
              "good.two": {"type": "boolean", "default": true}
            }}
            """
        let file = SchemaFile.parse(bytes(text))
        #expect(file.entries.map(\.pattern.rawValue) == ["good.one", "good.two"])
        #expect(file.entries.map(\.line) == [2, 4])
        try #require(file.problems.count == 1)
        #expect(file.problems[0].line == 3)
        #expect(file.problems[0].problem.contains("minimum: expected a number"))
        #expect(file.problems[0].description.hasPrefix("line 3: \"bad.one\""))
    }

    @Test(arguments: [
        ("{\n  \"keys\": {\n    \"a\": {,}\n  }\n}", 3),
        ("{\"keys\": {}}\n\nx", 3),
        ("{\n\"keys\": {\n\"a\": {}\n", 4),
        ("\n\n  keys", 3),
        ("", 1),
    ])
    func notJSON(text: String, line: Int) {
        let file = SchemaFile.parse(bytes(text))
        #expect(file.entries.isEmpty)
        #expect(file.problems.count == 1)
        #expect(file.problems.first?.line == line)
        #expect(file.problems.first?.problem.hasPrefix("not valid JSON: ") == true)
    }

    @Test(arguments: [
        (#""org.example.*": {"type": "integer", "default": 1}"#, "a default needs an exact key, not a pattern"),
        (
            #""org.example.size": {"type": "integer", "maximum": 72, "default": 80}"#,
            "default does not conform: 80 is above the maximum 72"
        ),
        (
            #""org.example.size": {"properties": {"a": {"type": "string"}}, "default": {"a": 1}}"#,
            "default does not conform: at .a: expected string, got integer"
        ),
        (#""org..example": {}"#, #"invalid key "org..example": empty segment"#),
        (#""org.ex ample": {}"#, "invalid character"),
        (#""org.**.x": {}"#, "'**' is only allowed as the last segment"),
        (#""org.example": "integer""#, "expected an object holding the key's schema"),
        (#""org.example": {"summary": 1}"#, #""summary" must be a string"#),
        (#""org.example": {"description": ["x"]}"#, #""description" must be a string"#),
        (#""org.example": {"type": "int"}"#, #"invalid schema: type: unknown type "int""#),
        (#""org.example": {"pattern": "^a"}"#, #"invalid schema: unsupported keyword "pattern""#),
    ])
    func refusedEntries(entry: String, problem: String) throws {
        let text = "{\"keys\": {\n  \"before\": {},\n  \(entry),\n  \"after\": {}\n}}"
        let file = SchemaFile.parse(bytes(text))
        #expect(file.entries.map(\.pattern.rawValue) == ["before", "after"])
        try #require(file.problems.count == 1)
        #expect(file.problems[0].line == 3)
        #expect(file.problems[0].problem.contains(problem), "\(file.problems[0].problem)")
    }

    @Test func aNullDefaultIsADefault() throws {
        let file = SchemaFile.parse(bytes(#"{"keys": {"a.b": {"type": ["string", "null"], "default": null}}}"#))
        #expect(file.problems == [])
        let entry = try #require(file.entries.first)
        #expect(entry.defaultValue == .some(.null))
        let refused = SchemaFile.parse(bytes(#"{"keys": {"a.b": {"type": "string", "default": null}}}"#))
        #expect(refused.entries.isEmpty)
        #expect(refused.problems.first?.problem == "\"a.b\": default does not conform: expected string, got null")
    }

    @Test func keyLimitsApply() {
        let text = #"{"keys": {"a.b.c": {}, "a.b": {}}}"#
        let file = SchemaFile.parse(bytes(text), keyLimits: KeyLimits(maxLength: 256, maxDepth: 2))
        #expect(file.entries.map(\.pattern.rawValue) == ["a.b"])
        #expect(file.problems.first?.problem.contains("more than 2 segments") == true)
    }

    @Test func aKeyDeclaredTwiceKeepsItsFirstEntry() throws {
        let text = """
            {"keys": {
              "a.b": {"type": "integer"},
              "c": {},
              "a.b": {"type": "string"}
            }}
            """
        let file = SchemaFile.parse(bytes(text))
        #expect(file.entries.map(\.pattern.rawValue) == ["a.b", "c"])
        #expect(file.entries.first?.schema.typeSummary == "integer")
        try #require(file.problems.count == 1)
        #expect(file.problems[0].line == 4)
        #expect(file.problems[0].problem.contains("line 2"))
    }

    @Test func theTopLevel() throws {
        let extra = SchemaFile.parse(bytes("{\n  \"key\": {},\n  \"keys\": {\"a\": {}}\n}"))
        #expect(extra.entries.map(\.pattern.rawValue) == ["a"])
        #expect(extra.problems.map(\.line) == [2])
        #expect(extra.problems.first?.problem.contains("unknown member \"key\"") == true)

        let noKeys = SchemaFile.parse(bytes(#"{"$comment": "empty"}"#))
        #expect(noKeys.entries.isEmpty)
        #expect(noKeys.problems == [SettingsFileProblem(line: 0, problem: "no \"keys\" member")])

        let notAnObject = SchemaFile.parse(bytes("\n[1]"))
        #expect(notAnObject.problems.map(\.line) == [2])

        let keysNotAnObject = SchemaFile.parse(bytes("{\n\"keys\": [1]}"))
        #expect(keysNotAnObject.problems == [SettingsFileProblem(line: 2, problem: "\"keys\" must be an object")])

        let twice = SchemaFile.parse(bytes("{\"keys\": {\"a\": {}},\n\"keys\": {\"b\": {}}}"))
        #expect(twice.entries.map(\.pattern.rawValue) == ["a"])
        #expect(twice.problems.map(\.line) == [2])
    }

    @Test func fromAParsedValue() throws {
        let value: JSONValue = [
            "keys": [
                "z.last": ["type": "string", "default": "x", "summary": "Last"],
                "a.first": ["type": "integer", "default": "not an integer"],
                "m.*": [:],
            ],
            "extra": true,
        ]
        let file = SchemaFile.parse(value)
        #expect(file.entries.map(\.pattern.rawValue) == ["m.*", "z.last"])
        #expect(file.entries.allSatisfy { $0.line == 0 })
        #expect(file.entries.last?.defaultValue == "x")
        #expect(file.entries.last?.summary == "Last")
        #expect(file.problems.map(\.line) == [0, 0])
        #expect(file.problems.map(\.description).contains { $0.hasPrefix("unknown member \"extra\"") })
        #expect(
            file.problems.map(\.description).contains {
                $0 == "\"a.first\": default does not conform: expected integer, got string"
            })
        #expect(SchemaFile.parse("keys").problems.count == 1)
        #expect(SchemaFile.parse(["keys": 1]).problems.count == 1)
    }

    @Test func problemsDescribeThemselves() {
        #expect(SettingsFileProblem(line: 3, problem: "bad").description == "line 3: bad")
        #expect(SettingsFileProblem(line: 0, problem: "bad").description == "bad")
    }

    @Test func scannerSurvivesTextThatIsNotJSON() {
        // The scanner only runs on text that parsed, but must not trap on anything.
        for text in ["{", "{\"", "{\"a", "{\"a\"", "{\"a\":", "{\"a\": [", "{\"a\": \"\\", "{\"a\": 1,", "\"\\"] {
            let scanner = JSONPositionScanner(text: bytes(text))
            for member in scanner.members(ofObjectAt: 0) {
                _ = scanner.name(of: member)
                _ = scanner.value(of: member)
            }
        }
    }
}

@Suite("lockdown files")
struct LockdownFileTests {
    @Test func rules() throws {
        let text = """
            # A comment; blank lines are ignored.

            org.example.kiosk.url = "https://example.org/#top"
              org.example.kiosk.** = true
            org.example.editor.font-size
            \t# An indented comment
            org.example.editor.theme={ "name" : "dark", "sizes" : [ 1, 2 ] }\t
            org.example.*.mode   =   null
            """
        let file = LockdownFile.parse(bytes(text))
        #expect(file.problems == [])
        try #require(file.rules.count == 5)
        #expect(file.rules.map(\.line) == [3, 4, 5, 7, 8])
        #expect(
            file.rules.map(\.pattern.rawValue) == [
                "org.example.kiosk.url", "org.example.kiosk.**", "org.example.editor.font-size",
                "org.example.editor.theme", "org.example.*.mode",
            ])
        #expect(file.rules[0].forcedValue == bytes(#""https://example.org/#top""#))
        #expect(file.rules[1].forcedValue == bytes("true"))
        #expect(!file.rules[1].pattern.isExact)
        #expect(file.rules[2].forcedValue == nil)
        #expect(file.rules[2].pattern.isExact)
        let theme = try JSONValue(parsing: try #require(file.rules[3].forcedValue))
        #expect(theme == ["name": "dark", "sizes": [1, 2]])
        #expect(file.rules[3].forcedValue?.contains(UInt8(ascii: " ")) == false)
        #expect(file.rules[4].forcedValue == bytes("null"))
    }

    @Test func valuesAreCompacted() {
        let file = LockdownFile.parse(bytes("a.b = { \"a\" : 1 }\na.c = [ 1 ,\t2 ]\na.d = \"x  y\""))
        #expect(file.rules.map(\.forcedValue) == [bytes(#"{"a":1}"#), bytes("[1,2]"), bytes(#""x  y""#)])
    }

    @Test func crlfAndBlankOnlyLines() {
        let file = LockdownFile.parse(bytes("a.b = 1\r\n\r\n  \t \r\n# c\r\nc.d\r\n"))
        #expect(file.problems == [])
        #expect(file.rules.map(\.line) == [1, 5])
        #expect(file.rules.map(\.forcedValue) == [bytes("1"), nil])
    }

    @Test(arguments: [
        ("a..b = 1", #"invalid key "a..b": empty segment"#),
        ("a.b$ = 1", "invalid character '$'"),
        ("a.**.b", "'**' is only allowed as the last segment"),
        ("a.b =", #""=" with no value after it"#),
        ("a.b =   \t", #""=" with no value after it"#),
        ("= 1", #"expected a key or pattern before "=""#),
        ("a.b c", #"expected "=" and a JSON value"#),
        ("a.b = tru", "not a JSON value: "),
        ("a.b = 'x'", "not a JSON value: "),
        ("a.b = {\"a\": 1", "not a JSON value: "),
        ("a.b = 1 # forced", "(a comment must be on a line of its own)"),
        ("a.b = 1 2", "not a JSON value: "),
    ])
    func refusedLines(line: String, problem: String) throws {
        let text = "first.key = 1\n# comment\n\(line)\nlast.key\n"
        let file = LockdownFile.parse(bytes(text))
        #expect(file.rules.map(\.pattern.rawValue) == ["first.key", "last.key"])
        #expect(file.rules.map(\.line) == [1, 4])
        try #require(file.problems.count == 1)
        #expect(file.problems[0].line == 3)
        #expect(file.problems[0].problem.contains(problem), "\(file.problems[0].problem)")
    }

    @Test func valueSizeLimit() {
        let text = "a.b = \"\(String(repeating: "x", count: 98))\"\na.c = \"\(String(repeating: "x", count: 99))\""
        let file = LockdownFile.parse(bytes(text), maxValueSize: 100)
        #expect(file.rules.map(\.pattern.rawValue) == ["a.b"])
        #expect(file.problems.map(\.line) == [2])
        #expect(file.problems.first?.problem == "the value is 101 bytes, more than the limit of 100 bytes")
        // The limit applies to the compact text: whitespace inside the value does not count.
        let spaced = LockdownFile.parse(bytes("a.b = [\(String(repeating: " ", count: 200))1]"), maxValueSize: 3)
        #expect(spaced.problems == [])
        #expect(spaced.rules.first?.forcedValue == bytes("[1]"))
    }

    @Test func keyLimitsApply() {
        let file = LockdownFile.parse(bytes("a.b.c\na.b"), keyLimits: KeyLimits(maxLength: 256, maxDepth: 2))
        #expect(file.rules.map(\.pattern.rawValue) == ["a.b"])
        #expect(file.problems.map(\.line) == [1])
    }

    @Test func notUTF8() {
        var text = bytes("a.b = 1\nc.d = \"")
        text += [0xFF, 0xFE]
        text += bytes("\"\n# caf\u{E9} in Latin-1: ")
        text += [0xE9]
        text += bytes("\ne.f\n")
        let file = LockdownFile.parse(text)
        #expect(file.rules.map(\.pattern.rawValue) == ["a.b", "e.f"])
        #expect(file.problems == [SettingsFileProblem(line: 2, problem: "not valid UTF-8")])
    }

    @Test func everyRuleIsKeptInOrder() {
        let file = LockdownFile.parse(bytes("a.b = 1\na.b = 2\na.b"))
        #expect(file.rules.map(\.line) == [1, 2, 3])
        #expect(file.rules.map(\.forcedValue) == [bytes("1"), bytes("2"), nil])
    }

    @Test func empty() {
        let file = LockdownFile.parse([])
        #expect(file.rules.isEmpty && file.problems.isEmpty)
    }
}
