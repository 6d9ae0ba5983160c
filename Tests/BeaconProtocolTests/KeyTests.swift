import Testing

@testable import BeaconProtocol

@Suite("keys and patterns")
struct KeyTests {
    @Test(arguments: ["a", "user.name", "power.battery.level", "A-b_c.0.x-", "_", "-"])
    func validKeys(text: String) throws {
        let key = try PropertyKey(text)
        #expect(key.rawValue == text)
        #expect(key.segments.joined(separator: ".") == text)
    }

    @Test(arguments: [
        ("", "empty"), (".a", "empty segment"), ("a.", "empty segment"), ("a..b", "empty segment"),
        ("a b", "invalid character"), ("a/b", "invalid character"), ("é", "invalid character"),
        ("a.*", "wildcards"), ("a.**", "wildcards"),
    ])
    func invalidKeys(text: String, reasonFragment: String) {
        #expect {
            try PropertyKey(text)
        } throws: { ($0 as? KeyError)?.reason.contains(reasonFragment) == true && ($0 as? KeyError)?.input == text }
    }

    @Test func everyByteIsJudgedByTheSegmentAlphabet() {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-".utf8)
        for byte in UInt8.min...UInt8.max where byte != UInt8(ascii: ".") {
            for bytes in [[byte], [UInt8(ascii: "a"), byte, UInt8(ascii: "b")], [UInt8(ascii: "a"), 0x2E, byte]] {
                let text = String(decoding: bytes, as: UTF8.self)
                let accepted = (try? PropertyKey(text)) != nil
                // Bytes above 127 alone are not UTF-8: String replaces them, and the replacement is refused too.
                #expect(accepted == allowed.contains(byte), "byte \(byte)")
            }
        }
    }

    @Test func keyLimits() throws {
        let limits = KeyLimits(maxLength: 10, maxDepth: 3)
        #expect(throws: Never.self) { try PropertyKey("a.b.c", limits: limits) }
        #expect(throws: KeyError.self) { try PropertyKey("a.b.c.d", limits: limits) }
        #expect(throws: Never.self) { try PropertyKey("abcdefghij", limits: limits) }
        #expect(throws: KeyError.self) { try PropertyKey("abcdefghijk", limits: limits) }
        #expect(throws: KeyError.self) { try KeyPattern("a.*.*.**", limits: limits) }
        #expect(KeyLimits.default.maxLength == 256 && KeyLimits.default.maxDepth == 16)
        let long = String(repeating: "a", count: 10_000)
        #expect {
            try PropertyKey(long)
        } throws: { ($0 as? KeyError).map { $0.input.count < 400 } ?? false }
    }

    @Test func prefixes() throws {
        let key = try PropertyKey("a.b.c")
        #expect(key.hasPrefix(try PropertyKey("a")))
        #expect(key.hasPrefix(try PropertyKey("a.b")))
        #expect(key.hasPrefix(try PropertyKey("a.b.c")))
        #expect(!key.hasPrefix(try PropertyKey("a.b.c.d")))
        let abc = try PropertyKey("a.bc")
        let ab = try PropertyKey("a.b")
        #expect(!key.hasPrefix(abc))
        #expect(!abc.hasPrefix(ab))
    }

    @Test func ordering() throws {
        let keys = try ["a-b", "a.b", "a", "b", "a.b.c", "a0", "a.a"].map { try PropertyKey($0) }
        #expect(keys.sorted().map(\.rawValue) == ["a", "a.a", "a.b", "a.b.c", "a-b", "a0", "b"])
    }

    @Test(arguments: [
        ("power.**", "power.x", true),
        ("power.**", "power.x.y", true),
        ("power.**", "power", false),
        ("power.**", "powers.x", false),
        ("power.**", "other.x", false),
        ("**", "a", true),
        ("**", "a.b.c", true),
        ("*", "a", true),
        ("*", "a.b", false),
        ("app.*.state", "app.mail.state", true),
        ("app.*.state", "app.state", false),
        ("app.*.state", "app.mail.state.x", false),
        ("app.*.state", "app.mail.other", false),
        ("*.*", "a.b", true),
        ("*.*", "a", false),
        ("*.**", "a", false),
        ("*.**", "a.b", true),
        ("user.name", "user.name", true),
        ("user.name", "user.names", false),
        ("user.name", "user.nam", false),
        ("user.name", "user", false),
        ("user.name", "user.name.x", false),
        ("a.*.c.**", "a.b.c.d.e", true),
        ("a.*.c.**", "a.b.c", false),
    ])
    func matching(pattern: String, key: String, expected: Bool) throws {
        #expect(try KeyPattern(pattern).matches(try PropertyKey(key)) == expected)
    }

    @Test(arguments: [
        ("**.a", "last segment"), ("a.**.b", "last segment"), ("a*", "whole segment"), ("*a", "whole segment"),
        ("a.***", "not a wildcard"), ("a.b*c", "whole segment"), ("", "empty"), ("a..*", "empty segment"),
    ])
    func invalidPatterns(text: String, reasonFragment: String) {
        #expect {
            try KeyPattern(text)
        } throws: { ($0 as? KeyError)?.reason.contains(reasonFragment) == true }
    }

    @Test func patternProperties() throws {
        #expect(try KeyPattern("a.b").isExact)
        #expect(try !KeyPattern("a.*").isExact)
        #expect(try KeyPattern("a.b.*.c").literalPrefix == ["a", "b"])
        #expect(try KeyPattern("**").literalPrefix == [])
        #expect(try KeyPattern("x.y").literalPrefix == ["x", "y"])
        #expect(try KeyPattern("a.**") == KeyPattern("a.**"))
        let uv = try PropertyKey("u.v")
        let exact = KeyPattern(exactly: uv)
        #expect(exact.isExact)
        #expect(exact.matches(uv))
        #expect(try exact == KeyPattern("u.v"))
    }
}
