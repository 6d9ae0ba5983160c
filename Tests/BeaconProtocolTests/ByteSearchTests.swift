import Testing

@testable import BeaconProtocol
@testable import Varlink

@Suite("byte search in strings")
struct ByteSearchTests {
    @Test(arguments: [
        ("schema.json.dpkg-old", ".dpkg-", true), ("a.dpkg-", ".dpkg-", true), (".dpkg-x", ".dpkg-", true),
        ("schema.json", ".dpkg-", false), (".dpkg", ".dpkg-", false), ("", "x", false), ("x", "", true),
        ("integer or string", " or ", true), ("a oror b", " or ", false), ("ééé", "é", true), ("e\u{301}", "é", false),
        ("aab", "ab", true), ("aaa", "aaaa", false),
    ])
    func containsBytes(text: String, part: String, expected: Bool) {
        #expect(text.containsBytes(part) == expected)
        #expect(text[...].containsBytes(part) == expected)
    }
}
