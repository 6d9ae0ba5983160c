import Testing

@testable import BeaconProtocol
@testable import Varlink

@Suite("varlink calls read in place")
struct VarlinkCallViewTests {
    /// The view of `text`, checked against the full parse: a view is only made for a call that parses, and then
    /// holds the same call, and every parameter's compact text is its encoding.
    private func check(_ bytes: [UInt8], limits: JSONLimits = .default) -> Bool {
        let parsed = Result { () throws(VarlinkError) in try VarlinkCall(parsing: bytes, limits: limits) }
        return bytes.withUnsafeBytes { raw -> Bool in
            guard let view = VarlinkCallView(parsing: raw, limits: limits) else { return false }
            guard view.hasValidMethodName else {
                guard case .failure = parsed else {
                    Issue.record("a valid call has an invalid method name: \(String(decoding: bytes, as: UTF8.self))")
                    return true
                }
                return false
            }
            guard case .success(let call) = parsed else {
                Issue.record("a view was made of a call that does not parse: \(String(decoding: bytes, as: UTF8.self))")
                return true
            }
            #expect(view.call == call)
            #expect(view.method == call.method)
            for (name, value) in call.parameters {
                var compact: [UInt8] = []
                guard let found = viewParameter(view, name) else { continue }
                found.appendCompact(to: &compact)
                #expect(found.intValue == value.intValue, "\(name)")
                if found.compactByteCount != nil {
                    #expect(found.compactBytes == compact, "\(name)")
                } else {
                    // Re-encoded from a parse.
                    #expect((try? JSONValue(parsing: found.compactBytes)) == value, "\(name)")
                }
                #expect((try? JSONValue(parsing: compact)) == value, "\(name)")
                if let count = found.compactByteCount {
                    var encoded: [UInt8] = []
                    value.encode(into: &encoded)
                    #expect(count == encoded.count)
                }
            }
            return true
        }
    }

    private func viewParameter(_ view: VarlinkCallView, _ name: String) -> JSONValueView? {
        switch name {
        case "key": view.parameter("key")
        case "value": view.parameter("value")
        case "name": view.parameter("name")
        case "userInfo": view.parameter("userInfo")
        case "n": view.parameter("n")
        default: nil
        }
    }

    @Test func readsTypicalCalls() {
        for text in [
            #"{"method":"io.beacon.Properties.Get","parameters":{"key":"user.name"}}"#,
            #"{"method":"io.beacon.Notifications.Post","parameters":{"name":"a.b","userInfo":{"p":"x","q":[1,-2,true,null]}},"oneway":true}"#,
            #" { "parameters" : { "key" : "a" , "value" : { "x" : 1.5 } } , "method" : "a.b.C" , "more" : null } "#,
            #"{"method":"a.b.C","parameters":{"value":{"a":1,"a":2}}}"#,
            #"{"method":"a.b.C","parameters":{"value":"\u00e9\n","key":"k"},"parameters":null}"#,
            #"{"method":"a.b.C","parameters":{"n":-0,"value":1e3,"key":"é"}}"#,
            #"{"method":"a.b.C","parameters":{"n":-9223372036854775808,"value":99999999999999999999}}"#,
            #"{"method":"a.b.C","parameters":{"key":"a"},"parameters":{"name":"b"}}"#,
            #"{"method":"a.b.C","parameters":{"key":"a","key":"b"}}"#,
        ] {
            #expect(check(Array(text.utf8)), "\(text)")
        }
        // Parsed by VarlinkCall only.
        for text in [
            #"{"method":"a.b.\u0043"}"#,
            #"{"\u006dethod":"a.b.C"}"#,
            #"{"method":"a.b.C","parameters":{"k\u0065y":"a"}}"#,
        ] {
            #expect(!check(Array(text.utf8)), "\(text)")
        }
    }

    @Test func specialBytesAnywhereInStringsAgreeWithTheParser() {
        // Strings are scanned eight bytes at a time; put each kind of byte the scan stops at in every position of
        // strings long enough to need several words, in a member name and in values.
        let specials: [[UInt8]] = [
            [0x22], Array(#"\"#.utf8), Array(#"\""#.utf8), Array(#"\u00e9"#.utf8), Array(#"\ud83d\ude00"#.utf8),
            [0x01], [0x1F], [0x7F], Array("é".utf8), Array("€".utf8), Array("😀".utf8), [0xC3], [0xFF], [0xE2, 0x82],
            [0xED, 0xA0, 0x80], [0x80],
        ]
        for length in 0..<20 {
            for position in 0...length {
                for special in specials {
                    var text = Array(repeating: UInt8(ascii: "x"), count: length)
                    text.insert(contentsOf: special, at: position)
                    let name = Array(#"{"method":"a.b.C","parameters":{""#.utf8) + text + Array(#"":1}}"#.utf8)
                    #expect(check(name) == !special.contains { $0 == 0x5C || $0 == 0x22 || $0 >= 0x80 || $0 < 0x20 })
                    _ = check(Array(#"{"method":"a.b.C","parameters":{"key":""#.utf8) + text + Array(#""}}"#.utf8))
                    _ = check(
                        Array(#"{"method":"a.b.C","parameters":{"value":{"p":""#.utf8) + text
                            + Array(#"","q":[1, "x"]}}}"#.utf8))
                    _ = check(Array(#"{"method":"a.b.C","parameters":{"value":[""#.utf8) + text + Array(#""]}}"#.utf8))
                    // The string runs to the end of the frame.
                    _ = check(Array(#"{"method":"a.b.C","parameters":{"key":""#.utf8) + text)
                }
            }
        }
    }

    @Test func compactAndSpacedValuesAgreeWithTheParser() throws {
        for value in [
            #"{"p":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#,
            #"{ "p":"x"}"#, #"{"p" :"x"}"#, #"{"p": "x"}"#, #"{"p":"x" }"#, #"{"p":"x","p":"y"}"#,
            #"[1,2 ]"#, #"[ 1,2]"#, #"[1 ,2]"#, #"[1, 2]"#, #"{"p":"\u00e9"}"#, #"{"\u0070":1}"#, #"{"p":"é"}"#,
            #"{"a":{"b":[{"c":null,"d":true,"e":false,"f":-1,"g":1.5,"h":"\n"}]}}"#, #"-0"#, #"1e2"#, #"[]"#, #"{}"#,
            #"[ ]"#, #"{ }"#, "[\n1,\t2\r]",
        ] {
            let bytes = Array(#"{"method":"a.b.C","parameters":{"value":"#.utf8) + Array(value.utf8) + Array("}}".utf8)
            #expect(check(bytes), "\(value)")
            try bytes.withUnsafeBytes { raw in
                let view = try #require(VarlinkCallView(parsing: raw, limits: .default))
                let found = try #require(view.parameter("value"))
                var encoded: [UInt8] = []
                try JSONValue(parsing: Array(value.utf8)).encode(into: &encoded)
                let spaced = value.utf8.contains { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
                if spaced { #expect(found.compactByteCount == nil, "\(value)") }
                if found.compactByteCount != nil { #expect(found.compactBytes == Array(value.utf8), "\(value)") }
                var compact: [UInt8] = []
                found.appendCompact(to: &compact)
                #expect(try JSONValue(parsing: compact) == JSONValue(parsing: encoded), "\(value)")
            }
        }
    }

    @Test func membersOutOfOrderAreWrittenInOrder() throws {
        for (value, expected) in [
            (#"{"b":1,"a":2}"#, #"{"a":2,"b":1}"#), (#"{"ab":1,"a":2}"#, #"{"a":2,"ab":1}"#),
            (#"{"a":{"d":1,"c":2},"b":3}"#, #"{"a":{"c":2,"d":1},"b":3}"#), (#"{"a":1,"a":2}"#, #"{"a":2}"#),
            (#"{"a":2,"ab":1}"#, #"{"a":2,"ab":1}"#),
        ] {
            let bytes = Array(#"{"method":"a.b.C","parameters":{"value":"#.utf8) + Array(value.utf8) + Array("}}".utf8)
            try bytes.withUnsafeBytes { raw in
                let view = try #require(VarlinkCallView(parsing: raw, limits: .default))
                let found = try #require(view.parameter("value"))
                #expect((found.compactByteCount != nil) == (value == expected), "\(value)")
                #expect(found.compactBytes == Array(expected.utf8), "\(value)")
            }
        }
    }

    @Test func parameterLookupTakesTheLastOfARepeatedName() throws {
        let bytes = Array(#"{"method":"a.b.C","parameters":{"key":"a","value":[1, 2],"key":"b"}}"#.utf8)
        try bytes.withUnsafeBytes { raw in
            let view = try #require(VarlinkCallView(parsing: raw, limits: .default))
            #expect(view.methodIs("a.b.C"))
            #expect(!view.methodIs("a.b.D"))
            #expect(view.parameter("key")?.stringValue == "b")
            #expect(view.parameter("value")?.kind == .array)
            #expect(view.parameter("value")?.compactByteCount == nil)
            #expect(view.parameter("missing") == nil)
        }
    }

    @Test func limitsApply() {
        let deep = Array(#"{"method":"a.b.C","parameters":{"value":[[[[1]]]]}}"#.utf8)
        #expect(!check(deep, limits: JSONLimits(maxDepth: 5, maxBytes: 1000)))
        #expect(check(deep, limits: JSONLimits(maxDepth: 6, maxBytes: 1000)))
        #expect(!check(deep, limits: JSONLimits(maxDepth: 6, maxBytes: 20)))
        #expect(!check(deep, limits: JSONLimits(maxDepth: 200, maxBytes: 1000)))
    }

    @Test func mutatedCallsAgreeWithTheParser() {
        var generator = SplitMix64(seed: 0x5CA7)
        let seeds = [
            #"{"method":"io.beacon.Properties.Set","parameters":{"key":"a.b","value":[1,{"x":"é","y":[true,null]}]},"more":true}"#,
            #"{"method":"io.beacon.Notifications.Post","parameters":{"name":"a.b","userInfo":{"p":"xxxxxxxxxxxx","n":12}},"oneway":true}"#,
            #"{"method":"io.beacon.Properties.Set","parameters":{"key":"bench.value","value":{"p":"xxxxxxxxxxxxxxxxxxxxxxxxxé\u00e9xxxxxxxxxxx"}}}"#,
        ].map { Array($0.utf8) }
        var views = 0
        for round in 0..<9000 {
            var input = seeds[round % seeds.count]
            generator.mutate(&input)
            if check(input, limits: JSONLimits(maxDepth: 4, maxBytes: 4096)) { views += 1 }
        }
        #expect(views > 0)
    }

    @Test("a view fits in 128 bytes, which a copy moves without calling memcpy")
    func viewSize() {
        #expect(MemoryLayout<VarlinkCallView>.size <= 128)
    }

    @Test func theViewOfNoCallHasNoMethodAndNoParameters() {
        let view = VarlinkCallView.none
        #expect(view.method.isEmpty)
        #expect(!view.hasValidMethodName)
        #expect(!view.methodIs("io.beacon.Properties.Get"))
        #expect(view.parameter("key") == nil)
        #expect(!view.more && !view.oneway && !view.upgrade)
        #expect(view.call.method.isEmpty && view.call.parameters.isEmpty)
    }
}
