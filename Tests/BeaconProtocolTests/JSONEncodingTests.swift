import BeaconProtocolFoundation
import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconProtocol
@testable import Varlink

@Suite("JSON encoding")
struct JSONEncodingTests {
    @Test("isCompactEncoding: true only for the bytes encode(into:) writes; deeper than the scanner goes is false")
    func compactEncoding() throws {
        func compact(_ text: String, maxDepth: Int = 64) throws -> Bool {
            try Array(text.utf8).withUnsafeBytes {
                try JSONValue.isCompactEncoding($0, limits: JSONLimits(maxDepth: maxDepth, maxBytes: 1 << 20))
            }
        }
        for text in [#"{"a":1,"b":[true,null,"x"]}"#, "12", #""text""#, "[]", "{}", "-3"] {
            #expect(try compact(text), "\(text)")
            var encoded: [UInt8] = []
            try JSONValue(parsing: text).encode(into: &encoded)
            #expect(String(decoding: encoded, as: UTF8.self) == text, "what encode writes")
        }
        for text in [#"{"b":1,"a":2}"#, #"{"a": 1}"#, " 1", "1 ", #""\u0041""#, "1.0", "1e2", #"{"a":1,"a":2}"#] {
            #expect(try !compact(text), "\(text)")
        }
        for text in ["", "{", #"{"a":}"#, "[1,]", "\u{1}"] {
            #expect(throws: JSONError.self, "\(text)") { try compact(text) }
        }
        let deep = String(repeating: "[", count: 150) + String(repeating: "]", count: 150)
        #expect(try !compact(deep, maxDepth: 512), "deeper than the scanner goes: parse it")
        #expect(throws: JSONError.self, "deeper than the limits, which the scanner reaches") {
            try compact(deep, maxDepth: 60)
        }
    }

    @Test(arguments: [
        (JSONValue.null, "null"),
        (.bool(true), "true"),
        (.bool(false), "false"),
        (.int(0), "0"),
        (.int(7), "7"),
        (.int(-42), "-42"),
        (.int(.max), "9223372036854775807"),
        (.int(.min), "-9223372036854775808"),
        (.double(1.5), "1.5"),
        (.double(1), "1.0"),
        (.double(-0.1), "-0.1"),
        (.double(1e300), "1e+300"),
        (.double(.leastNonzeroMagnitude), "5e-324"),
        (.double(.nan), "null"),
        (.double(.infinity), "null"),
        (.string(""), #""""#),
        (.string("a\"b\\c"), #""a\"b\\c""#),
        (.string("\n\r\t\u{8}\u{C}"), #""\n\r\t\b\f""#),
        (.string("\u{0}\u{1}\u{1F}\u{7F}"), "\"\\u0000\\u0001\\u001f\u{7F}\""),
        (.string("é😀\u{2028}/"), "\"é😀\u{2028}/\""),
        (.array([]), "[]"),
        (.array([1, "x", nil]), #"[1,"x",null]"#),
        (.object([:]), "{}"),
        (.object(["k": ["n": [true]]]), #"{"k":{"n":[true]}}"#),
    ])
    func encodes(value: JSONValue, expected: String) {
        #expect(value.jsonString == expected)
        #expect(value.byteSize == expected.utf8.count)
    }

    @Test func integersAreWrittenAsSwiftPrintsThem() {
        var values: [Int64] = Array(-1_100...1_100) + [.min, .max, .min + 1, .max - 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power - 1, power, power + 1, -power + 1, -power, -power - 1]
        }
        var generator = SystemRandomNumberGenerator()
        values += (0..<2_000).map { _ in Int64.random(in: .min ... .max, using: &generator) }
        for value in values {
            var bytes: [UInt8] = []
            JSONWriter.appendInt(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }

    @Test func roundTrips() throws {
        let values: [JSONValue] = [
            ["method": "io.beacon.Properties.Get", "parameters": ["key": "user.name"]],
            [1, -1, 0.5, 1e-7, 123_456_789.125, .double(0.1 + 0.2), .double(-0.0), .int(.min), .int(.max)],
            ["nested": [["a": [[], [:], nil]]], "s": "tab\tquote\"back\\slash\u{0}\u{10FFFF}"],
        ]
        for value in values {
            var bytes: [UInt8] = []
            value.encode(into: &bytes)
            #expect(try JSONValue(parsing: bytes) == value)
            #expect(value.byteSize == bytes.count)
        }
    }

    /// Special characters at every position relative to the 8-byte blocks the scanners work in.
    @Test func specialCharactersAtEveryPosition() throws {
        let specials: [Character] = ["\"", "\\", "\u{0}", "\u{1F}", "\n", "é", "😀", "\u{7F}"]
        for special in specials {
            for length in 1...24 {
                for position in 0..<length {
                    var characters = Array(repeating: Character("a"), count: length)
                    characters[position] = special
                    let string = String(characters)
                    var bytes: [UInt8] = []
                    JSONValue.string(string).encode(into: &bytes)
                    #expect(!bytes.contains { $0 < 0x20 })
                    #expect(bytes.count == JSONValue.string(string).byteSize)
                    #expect(try JSONValue(parsing: bytes) == .string(string))
                }
            }
        }
    }

    @Test func doublesRoundTripExactly() throws {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let number = Double(bitPattern: generator.next())
            guard number.isFinite else { continue }
            let parsed = try JSONValue(parsing: JSONValue.double(number).jsonString)
            #expect(parsed.doubleValue == number)
        }
    }

    @Test func appendsToExistingBuffer() {
        var buffer: [UInt8] = [1, 2]
        JSONValue.string("x").encode(into: &buffer)
        #expect(buffer == [1, 2, 0x22, UInt8(ascii: "x"), 0x22])
    }

    @Test func cursorWritesIntoReservedSpace() {
        var buffer: [UInt8] = [1, 2]
        let bytes: [UInt8] = Array("{\"p\":1}".utf8)
        let key = "power.battery"
        let count = 8 + key.utf8.count + 10 + bytes.count + 1 + JSONWriter.decimalLength(-42) + 1
        JSONWriter.append(count: count, to: &buffer) { out in
            out.write("{\"key\":\"")
            out.writeUnescaped(key)
            out.write("\",\"value\":")
            out.write(bytes)
            out.write(byte: UInt8(ascii: ","))
            out.write(int: -42)
            out.write(byte: UInt8(ascii: "}"))
        }
        #expect(buffer[0..<2] == [1, 2])
        #expect(String(decoding: buffer[2...], as: UTF8.self) == "{\"key\":\"power.battery\",\"value\":{\"p\":1},-42}")
    }

    @Test func cursorReservesMoreThanItsZeroBlock() {
        // Larger than the block of zeros the space is copied from, and not a multiple of it.
        let large = (0..<10_001).map { UInt8(truncatingIfNeeded: $0 % 251) }
        var buffer: [UInt8] = [7]
        JSONWriter.append(count: large.count + 1, to: &buffer) { out in
            out.write(large)
            out.write(byte: 0)
        }
        #expect(buffer == [7] + large + [0])
        JSONWriter.append(count: 0, to: &buffer) { _ in }
        #expect(buffer.count == large.count + 2)
    }

    /// Writes a message of every kind of write through a cursor that reserves `count` bytes.
    private func writeMessage(count: Int, after prefix: [UInt8], large: [UInt8]) -> [UInt8] {
        var buffer = prefix
        JSONWriter.append(count: count, to: &buffer) { out in
            out.write("{\"key\":\"")
            out.writeUnescaped("power.battery")
            out.write("\",\"value\":")
            out.write(large)
            out.write(byte: UInt8(ascii: ","))
            out.write(int: -1_234_567)
            out.write(byte: UInt8(ascii: "}"))
        }
        return buffer
    }

    @Test("a wrong count only sizes the reservation: the bytes are exactly those written")
    func cursorCountIsAHint() {
        let large = (0..<300).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let expected = Array("{\"key\":\"power.battery\",\"value\":".utf8) + large + Array(",-1234567}".utf8)
        let prefix: [UInt8] = [1, 2]
        let exact = expected.count
        // Writes past the reservation in the middle of a literal, of the large bytes and of the integer; the cursor's
        // own space grows again for the large bytes when little was reserved.
        for count in [0, 1, 5, 30, exact - 300, exact - 10, exact - 2, exact - 1, exact, exact + 1, exact * 40] {
            #expect(writeMessage(count: count, after: prefix, large: large) == prefix + expected, "count \(count)")
            #expect(writeMessage(count: count, after: [], large: large) == expected, "count \(count), empty")
        }
        var buffer: [UInt8] = []
        JSONWriter.append(count: -3, to: &buffer) { $0.write("ab") }
        #expect(buffer == Array("ab".utf8))
        JSONWriter.append(count: 3, to: &buffer) { $0.write(int: 1234) }
        #expect(buffer == Array("ab1234".utf8))
        JSONWriter.append(count: 10, to: &buffer) { _ in }
        #expect(buffer == Array("ab1234".utf8))
    }

    @Test("writes spanning several growths keep their order")
    func cursorGrowsRepeatedly() {
        var buffer: [UInt8] = [9]
        var expected: [UInt8] = [9]
        JSONWriter.append(count: 1, to: &buffer) { out in
            for index in 0..<2000 {
                out.write(int: Int64(index))
                out.write(byte: UInt8(ascii: ","))
            }
        }
        for index in 0..<2000 { expected += Array("\(index),".utf8) }
        #expect(buffer == expected)
    }

    @Test func codableBridge() throws {
        struct Sample: Codable, Equatable {
            var name: String
            var count: Int
            var ratio: Double
            var tags: [String]
            var child: [String: Bool]?
        }
        let sample = Sample(name: "n", count: 3, ratio: 0.5, tags: ["a"], child: ["x": true])
        let value = try JSONValue(encoding: sample)
        #expect(value["name"] == "n")
        #expect(value["count"] == 3)
        #expect(try value.decode(Sample.self) == sample)
        let original: JSONValue = ["a": [1, 2.5, "s", nil, false]]
        let data = try JSONEncoder().encode(original)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == ["a": [1, 2.5, "s", nil, false]])
    }

    /// Python's `json` module must decode our encoding of tricky strings to the same code points.
    @Test(.enabled(if: pythonPath() != nil, "python3 is not on PATH"))
    func pythonDecodesOurStrings() throws {
        let strings: [String] = [
            "plain",
            "quote \" and backslash \\ and slash /",
            "controls \u{0}\u{1}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{1B}\u{1F}\u{7F}",
            "emoji 😀👩‍👩‍👧 flags 🇫🇷",
            "separators \u{2028} \u{2029} nbsp \u{A0} bom \u{FEFF}",
            "astral \u{10000} \u{10FFFF} é 中文",
            "",
        ]
        var input: [UInt8] = []
        for string in strings {
            JSONValue.array([.string(string)]).encode(into: &input)
            input.append(UInt8(ascii: "\n"))
        }
        let script = """
            import sys, json
            for line in sys.stdin.buffer.read().decode('utf-8').split('\\n')[:-1]:
                print(' '.join('%x' % ord(c) for c in json.loads(line)[0]))
            """
        let output = try runProcess(pythonPath()!, ["-c", script], input: input)
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == strings.count)
        for (string, line) in zip(strings, lines) {
            let expected = string.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
            #expect(String(line) == expected, "for \(string.debugDescription)")
        }
    }
}

func pythonPath() -> String? {
    let candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
    for directory in candidates {
        let path = "\(directory)/python3"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

func runProcess(_ executable: String, _ arguments: [String], input: [UInt8]) throws -> String {
    let process = try ChildProcess(executable, arguments, input: input, output: .capture)
    let data = process.readOutput()
    #expect(process.wait() == 0)
    return String(decoding: data, as: UTF8.self)
}
