import Testing

@testable import BeaconProtocol
@testable import Varlink

@Suite("JSON parsing")
struct JSONParsingTests {
    @Test func scalars() throws {
        #expect(try JSONValue(parsing: "null") == .null)
        #expect(try JSONValue(parsing: " true ") == .bool(true))
        #expect(try JSONValue(parsing: "false") == .bool(false))
        #expect(try JSONValue(parsing: "\"hi\"") == .string("hi"))
        #expect(try JSONValue(parsing: "\t\r\n42\n") == .int(42))
    }

    @Test(arguments: [
        ("0", JSONValue.int(0)),
        ("-0", .int(0)),
        ("123", .int(123)),
        ("-17", .int(-17)),
        ("9223372036854775807", .int(.max)),
        ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808)),
        ("-9223372036854775809", .double(-9_223_372_036_854_775_808)),
        ("1.5", .double(1.5)),
        ("-0.25", .double(-0.25)),
        ("1e3", .double(1000)),
        ("1E+3", .double(1000)),
        ("2.5e-3", .double(0.0025)),
        ("0.1", .double(0.1)),
        ("1.0", .double(1)),
        ("123456789012345678901234567890", .double(1.2345678901234568e29)),
        // Around the eighteen digits read without overflow checks.
        ("999999999999999999", .int(999_999_999_999_999_999)),
        ("-999999999999999999", .int(-999_999_999_999_999_999)),
        ("1000000000000000000", .int(1_000_000_000_000_000_000)),
        ("-1234567890123456789", .int(-1_234_567_890_123_456_789)),
        ("123456789012345678.5", .double(1.2345678901234568e17)),
        ("12345678901234567e2", .double(1.2345678901234567e18)),
    ])
    func numbers(text: String, expected: JSONValue) throws {
        #expect(try JSONValue(parsing: text) == expected)
    }

    @Test func containers() throws {
        let value = try JSONValue(parsing: #"{"a": [1, 2.5, "x", null, true, {}], "b": {"c": []}}"#)
        #expect(value == ["a": [1, 2.5, "x", nil, true, [:]], "b": ["c": []]])
        #expect(value.depth == 3)
        #expect(value["a"]?.arrayValue?.count == 6)
        #expect(value["b"]?["c"] == .array([]))
    }

    /// The four whitespace bytes, alone and mixed, before and after every token.
    @Test func whitespaceAroundEveryToken() throws {
        for space in [" ", "\t", "\n", "\r", " \t\n\r"] {
            let text =
                ["{", "\"a\"", ":", "[", "1", ",", "true", "]", ",", "\"b\"", ":", "null", "}"]
                .map { space + $0 }.joined() + space
            #expect(try JSONValue(parsing: text) == ["a": [1, true], "b": .null])
        }
    }

    @Test func duplicateMembersKeepTheLast() throws {
        #expect(try JSONValue(parsing: #"{"a":1,"a":2}"#) == ["a": 2])
    }

    @Test func escapes() throws {
        let value = try JSONValue(parsing: #""a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00\u0000""#)
        #expect(value == .string("a\"b\\c/d\u{8}\u{c}\n\r\tAé€😀\u{0}"))
    }

    @Test func rawUTF8InStrings() throws {
        #expect(try JSONValue(parsing: "\"héllo €  😀 \u{2028}\"") == .string("héllo €  😀 \u{2028}"))
    }

    /// Every rejection class, with the kind and the offset of the problem.
    @Test(arguments: [
        ("", JSONError.Kind.unexpectedEnd, 0),
        ("   ", .unexpectedEnd, 3),
        ("[1,", .unexpectedEnd, 3),
        ("[1 2]", .syntax, 3),
        ("{\"a\" 1}", .syntax, 5),
        ("{\"a\":1,}", .syntax, 7),
        ("[1,]", .syntax, 3),
        ("{1:2}", .syntax, 1),
        ("tru", .unexpectedEnd, 3),
        ("nul!", .syntax, 3),
        ("1 2", .trailingData, 2),
        ("{} x", .trailingData, 3),
        ("01", .invalidNumber, 0),
        ("-01", .invalidNumber, 0),
        ("-", .invalidNumber, 1),
        ("1.", .invalidNumber, 2),
        (".5", .syntax, 0),
        ("1e", .invalidNumber, 2),
        ("1e+", .invalidNumber, 3),
        ("+1", .syntax, 0),
        ("NaN", .invalidNumber, 0),
        ("Infinity", .invalidNumber, 0),
        ("-Infinity", .invalidNumber, 1),
        ("1e400", .invalidNumber, 0),
        ("\"abc", .unexpectedEnd, 4),
        ("\"a\nb\"", .controlCharacter, 2),
        ("\"a\u{1}\"", .controlCharacter, 2),
        (#""\x""#, .invalidEscape, 1),
        (#""\u12G4""#, .invalidEscape, 5),
        (#""\u12""#, .invalidEscape, 5),
        (#""\ud800""#, .invalidUTF8, 1),
        (#""\ud800\u0041""#, .invalidUTF8, 7),
        (#""\udc00""#, .invalidUTF8, 1),
        (#""\ud83dx""#, .invalidUTF8, 1),
        // Bytes below the space that are not JSON whitespace are not skipped where a token may start.
        ("[\u{1}]", .syntax, 1),
        ("[1,\u{B}2]", .syntax, 3),
        ("{\u{C}}", .syntax, 1),
    ])
    func rejects(text: String, kind: JSONError.Kind, offset: Int) {
        // A depth limit above the recursion limit selects the iterative strategy.
        #expect {
            _ = try JSONValue(parsing: text, limits: JSONLimits(maxDepth: 1000, maxBytes: 1 << 20))
        } throws: { error in
            guard let error = error as? JSONError else { return false }
            return error.kind == kind && error.offset == offset
        }
        #expect {
            _ = try JSONValue(parsing: text)
        } throws: { error in
            guard let error = error as? JSONError else { return false }
            return error.kind == kind && error.offset == offset && !error.reason.isEmpty
        }
    }

    @Test(
        arguments: [
            ([0x22, 0xFF, 0x22], 1),  // never valid
            ([0x22, 0xC3, 0x22], 2),  // missing continuation
            ([0x22, 0xC0, 0x80, 0x22], 1),  // overlong NUL
            ([0x22, 0xE0, 0x80, 0x80, 0x22], 2),  // overlong three-byte
            ([0x22, 0xED, 0xA0, 0x80, 0x22], 2),  // encoded surrogate
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 2),  // above U+10FFFF
            ([0x22, 0xF0, 0x9F, 0x98], 1),  // truncated at the end
            ([0x22, 0x5C, 0x6E, 0xFE, 0x22], 3),  // after an escape (slow path)
            ([0x5B, 0xE2, 0x82, 0xAC, 0x5D], 1),  // valid UTF-8 outside a string is a syntax error, see below
            ([0x5B, 0xE2, 0x82, 0x5D], 3),  // invalid UTF-8 outside a string
            ([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x31, 0x7D, 0x80], 7),  // trailing
        ] as [([UInt8], Int)])
    func rejectsInvalidUTF8(bytes: [UInt8], offset: Int) {
        #expect {
            _ = try JSONValue(parsing: bytes)
        } throws: { error in
            guard let error = error as? JSONError else { return false }
            let validOutside = bytes == [0x5B, 0xE2, 0x82, 0xAC, 0x5D]
            let trailing = bytes.last == 0x80
            let kind: JSONError.Kind = validOutside ? .syntax : trailing ? .trailingData : .invalidUTF8
            return error.kind == kind && error.offset == offset
        }
    }

    @Test func depthLimitIsExact() throws {
        let limits = JSONLimits(maxDepth: 5, maxBytes: 1000)
        let five = String(repeating: "[", count: 5) + String(repeating: "]", count: 5)
        #expect(try JSONValue(parsing: five, limits: limits).depth == 5)
        let six = String(repeating: "[", count: 6) + String(repeating: "]", count: 6)
        #expect(throws: JSONError.self) { try JSONValue(parsing: six, limits: limits) }
        let objects = String(repeating: #"{"a":"#, count: 6) + "1" + String(repeating: "}", count: 6)
        #expect {
            try JSONValue(parsing: objects, limits: limits)
        } throws: { ($0 as? JSONError)?.kind == .tooDeep && ($0 as? JSONError)?.offset == 25 }
        // An empty container counts as a level too.
        let emptyAtSix = String(repeating: "[", count: 5) + "{}" + String(repeating: "]", count: 5)
        #expect(throws: JSONError.self) { try JSONValue(parsing: emptyAtSix, limits: limits) }
    }

    @Test func hundredThousandLevelsThrowTooDeep() throws {
        let open = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect {
            try JSONValue(parsing: open, limits: JSONLimits(maxDepth: 64, maxBytes: 1 << 20))
        } throws: { ($0 as? JSONError)?.kind == .tooDeep }
        // A huge depth limit is clamped, and deep limits use heap stacks rather than recursion.
        let closed = open + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        #expect {
            try JSONValue(parsing: closed, limits: JSONLimits(maxDepth: .max, maxBytes: .max))
        } throws: { ($0 as? JSONError)?.kind == .tooDeep && ($0 as? JSONError)?.offset == JSONLimits.maximumDepth }
        let mixed = [UInt8](String(repeating: #"{"k":["#, count: 50_000).utf8)
        #expect {
            try JSONValue(parsing: mixed, limits: JSONLimits(maxDepth: 100_000, maxBytes: .max))
        } throws: { ($0 as? JSONError)?.kind == .tooDeep }
        let deepest =
            String(repeating: "[", count: JSONLimits.maximumDepth)
            + String(repeating: "]", count: JSONLimits.maximumDepth)
        #expect(try JSONValue(parsing: deepest, limits: JSONLimits(maxDepth: .max, maxBytes: .max)).depth == 512)
    }

    @Test func sizeLimit() throws {
        let text = "\"" + String(repeating: "x", count: 100) + "\""
        #expect(try JSONValue(parsing: text, limits: JSONLimits(maxDepth: 4, maxBytes: 102)).stringValue?.count == 100)
        #expect {
            try JSONValue(parsing: text, limits: JSONLimits(maxDepth: 4, maxBytes: 101))
        } throws: { ($0 as? JSONError)?.kind == .tooLarge }
    }

    @Test func errorsDescribeThemselves() {
        do {
            _ = try JSONValue(parsing: "[1, x]")
            Issue.record("expected an error")
        } catch {
            #expect(error.offset == 4)
            #expect(error.description.contains("byte 4"))
            #expect(error.description.contains("'x'"))
        }
    }

    /// Seeded random bytes and mutations of valid documents: never a crash, always a value or a `JSONError`.
    @Test func randomInputRobustness() {
        var generator = SplitMix64(seed: 0xBEAC_0001)
        let alphabet = Array(#"{}[]",:\-+.0123456789eEtrufalsn u"#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xED, 0xF4, 0xFF]
        let seeds = [
            #"{"method":"io.beacon.Properties.Get","parameters":{"key":"user.name"}}"#,
            #"[1,-2.5e3,"a\u00e9\ud83d\ude00",true,false,null,{"x":[[]]}]"#,
        ].map { Array($0.utf8) }
        var values = 0
        var errors = 0
        for round in 0..<4000 {
            var input: [UInt8]
            if round % 2 == 0 {
                let length = Int(generator.next() % 64)
                input = (0..<length).map { _ in
                    generator.next() % 3 == 0
                        ? UInt8(truncatingIfNeeded: generator.next())
                        : alphabet[Int(generator.next() % UInt64(alphabet.count))]
                }
            } else {
                input = seeds[round / 2 % seeds.count]
                for _ in 0..<(1 + generator.next() % 4) {
                    let position = Int(generator.next() % UInt64(input.count))
                    switch generator.next() % 3 {
                    case 0: input[position] = UInt8(truncatingIfNeeded: generator.next())
                    case 1: input.remove(at: position)
                    default: input.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                    }
                    if input.isEmpty { break }
                }
            }
            #expect(parseIteratively(input, maxDepth: 8) == parseRecursively(input, maxDepth: 8))
            do {
                let value = try JSONValue(parsing: input, limits: JSONLimits(maxDepth: 8, maxBytes: 4096))
                // Whatever parses must survive an encode/parse round trip.
                var encoded: [UInt8] = []
                value.encode(into: &encoded)
                #expect(try JSONValue(parsing: encoded) == value)
                values += 1
            } catch {
                #expect(error.offset >= 0 && error.offset <= input.count)
                errors += 1
            }
        }
        #expect(values + errors == 4000)
        #expect(values > 0)
        #expect(errors > 0)
    }
}

/// The two parser strategies (bounded recursion for small depth limits, heap stacks for large ones) must agree
/// on every value and every error.
@Test(arguments: [
    #"{"a":[1,{"b":null}],"c":"\u00e9"}"#, "[[[[1]]]]", "[[[[[1]]]]]", "[1,2", "{\"a\" 1}", "[1,]", "{\"a\":1,}",
    "[01]",
    "{\"a\":[}", "[\"\\ud800\"]", "{}", "[]", " [ { } , [ ] ] ", "{\"a\":{\"b\":{\"c\":{}}}}",
])
func strategiesAgree(text: String) {
    let bytes = Array(text.utf8)
    #expect(parseIteratively(bytes, maxDepth: 4) == parseRecursively(bytes, maxDepth: 4))
}

private func parseIteratively(_ bytes: [UInt8], maxDepth: Int) -> Result<JSONValue, JSONError> {
    bytes.withUnsafeBytes { raw in
        Result { () throws(JSONError) in
            var parser = try JSONParser(raw, limits: JSONLimits(maxDepth: maxDepth, maxBytes: 1 << 20))
            let value = try parser.parseValueIteratively(depth: 0)
            try parser.expectEnd()
            return value
        }
    }
}

private func parseRecursively(_ bytes: [UInt8], maxDepth: Int) -> Result<JSONValue, JSONError> {
    bytes.withUnsafeBytes { raw in
        Result { () throws(JSONError) in
            var parser = try JSONParser(raw, limits: JSONLimits(maxDepth: maxDepth, maxBytes: 1 << 20))
            let value = try parser.parseValue(depth: 0)
            try parser.expectEnd()
            return value
        }
    }
}

/// A small deterministic generator for reproducible random inputs.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// One to three random edits of `input`: a byte replaced, removed, or an ASCII byte inserted.
    mutating func mutate(_ input: inout [UInt8]) {
        for _ in 0..<(1 + next() % 3) where !input.isEmpty {
            let position = Int(next() % UInt64(input.count))
            switch next() % 3 {
            case 0: input[position] = UInt8(truncatingIfNeeded: next())
            case 1: input.remove(at: position)
            default: input.insert(UInt8(truncatingIfNeeded: next() % 128), at: position)
            }
        }
    }
}
