import Testing

@testable import BeaconProtocol
@testable import Varlink

@Suite("varlink messages")
struct VarlinkMessageTests {
    private func parseCall(_ text: String, limits: JSONLimits = .default) throws(VarlinkError) -> VarlinkCall {
        try VarlinkCall(parsing: Array(text.utf8), limits: limits)
    }

    @Test func parsesATypicalCall() throws {
        let call = try parseCall(#"{"method":"io.beacon.Properties.Get","parameters":{"key":"user.name"}}"#)
        #expect(call.method == "io.beacon.Properties.Get")
        #expect(call.interface == "io.beacon.Properties")
        #expect(call.member == "Get")
        #expect(call.parameters == ["key": "user.name"])
        #expect(!call.more && !call.oneway && !call.upgrade)
    }

    @Test func parsesFlagsAndIgnoresUnknownMembers() throws {
        let call = try parseCall(
            #" { "extra": {"deep": [1]}, "more": true, "oneway": false, "upgrade": true, "method": "a.b.C" } "#)
        #expect(call.method == "a.b.C")
        #expect(call.parameters.isEmpty)
        #expect(call.more && !call.oneway && call.upgrade)
    }

    @Test(arguments: [
        (#"[1]"#, "malformed"),
        (#""#, "malformed"),
        (#"{"method":"a.b.C""#, "malformed"),
        (#"{"method":"a.b.C"} x"#, "malformed"),
        (#"{"parameters":{}}"#, "no \"method\""),
        (#"{"method":1}"#, "\"method\" must be a string"),
        (#"{"method":"a.b.C","parameters":[]}"#, "\"parameters\" must be an object"),
        (#"{"method":"a.b.C","more":"yes"}"#, "\"more\" must be a boolean"),
        (#"{"method":"a.b.C","oneway":1}"#, "\"oneway\" must be a boolean"),
        (#"{"method":"Get"}"#, "invalid method name"),
        (#"{"method":"io.beacon.Properties.get"}"#, "invalid method name"),
        (#"{"method":"beacon.Get"}"#, "invalid method name"),
        (#"{"method":"io..beacon.Get"}"#, "invalid method name"),
        (#"{"method":"io.beacon-.Get"}"#, "invalid method name"),
        (#"{"method":"1o.beacon.Get"}"#, "invalid method name"),
        (#"{"method":"io.beacon.Properties."}"#, "invalid method name"),
    ])
    func rejectsMalformedCalls(text: String, reasonFragment: String) {
        #expect {
            try parseCall(text)
        } throws: { error in
            guard let error = error as? VarlinkError, error.isProtocolError else { return false }
            return error.parameters["reason"]?.stringValue?.contains(reasonFragment) == true
        }
    }

    @Test func callLimitsApply() {
        let deep = #"{"method":"a.b.C","parameters":{"v":[[[[1]]]]}}"#
        #expect(throws: VarlinkError.self) { try parseCall(deep, limits: JSONLimits(maxDepth: 5, maxBytes: 1000)) }
        #expect(throws: Never.self) { try parseCall(deep, limits: JSONLimits(maxDepth: 6, maxBytes: 1000)) }
        #expect(throws: VarlinkError.self) { try parseCall(deep, limits: JSONLimits(maxDepth: 6, maxBytes: 20)) }
        #expect(throws: VarlinkError.self) { try VarlinkCall(parsing: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]) }
    }

    @Test func callRoundTrip() throws {
        let call = VarlinkCall(
            method: "io.beacon.Properties.Watch", parameters: ["patterns": ["a.**"], "since": 3], more: true,
            oneway: true, upgrade: true)
        var bytes: [UInt8] = []
        call.encode(into: &bytes)
        #expect(bytes.last == 0)
        #expect(bytes.dropLast().allSatisfy { $0 != 0 })
        #expect(try VarlinkCall(parsing: Array(bytes.dropLast())) == call)
    }

    @Test func replies() throws {
        var bytes: [UInt8] = []
        VarlinkReply(parameters: ["v": 1], continues: true).encode(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "{\"parameters\":{\"v\":1},\"continues\":true}\0")
        bytes.removeAll()
        VarlinkReply(parameters: [:]).encode(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "{\"parameters\":{}}\0")
        bytes.removeAll()
        VarlinkReply(error: .methodNotFound("a.b.C")).encode(into: &bytes)
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == "{\"error\":\"org.varlink.service.MethodNotFound\",\"parameters\":{\"method\":\"a.b.C\"}}\0")
        let parsed = try VarlinkReply(parsing: Array(bytes.dropLast()))
        #expect(parsed.error == "org.varlink.service.MethodNotFound")
        #expect(parsed.varlinkError == .methodNotFound("a.b.C"))
        let streamed = try VarlinkReply(parsing: Array(#"{"parameters":{"x":[1]},"continues":true,"new":0}"#.utf8))
        #expect(streamed == VarlinkReply(parameters: ["x": [1]], continues: true))
        let bare = try VarlinkReply(parsing: Array("{}".utf8))
        #expect(bare == VarlinkReply())
        #expect(throws: VarlinkError.self) { try VarlinkReply(parsing: Array(#"{"continues":1}"#.utf8)) }
        #expect(throws: VarlinkError.self) { try VarlinkReply(parsing: Array(#"{"error":{}}"#.utf8)) }
        #expect(throws: VarlinkError.self) { try VarlinkReply(parsing: Array(#"{"parameters":7}"#.utf8)) }
        #expect(throws: VarlinkError.self) { try VarlinkReply(parsing: Array("[]".utf8)) }
    }

    @Test func standardErrors() {
        #expect(VarlinkError.interfaceNotFound("x.y").parameters == ["interface": "x.y"])
        #expect(VarlinkError.invalidParameter("key").name == "org.varlink.service.InvalidParameter")
        #expect(VarlinkError.invalidParameter("key").parameters == ["parameter": "key"])
        #expect(VarlinkError.methodNotImplemented("a.b.C").parameters == ["method": "a.b.C"])
        #expect(VarlinkError.permissionDenied().name == "org.varlink.service.PermissionDenied")
        #expect(VarlinkError.expectedMore().name == "org.varlink.service.ExpectedMore")
        // A local name: the server sends its service's name for it, or nothing.
        #expect(VarlinkError.protocolError("bad").isProtocolError)
        #expect(!VarlinkError.protocolError("bad").name.hasPrefix("io.beacon."))
        #expect(VarlinkError.protocolError("bad").description.contains("bad"))
    }

    @Test func frameSplitter() throws {
        var splitter = VarlinkFrameSplitter(maxFrameSize: 8)
        #expect(try splitter.nextFrame() == nil)
        splitter.append(Array("ab\0cd".utf8))
        #expect(try splitter.nextFrame() == Array("ab".utf8))
        #expect(try splitter.nextFrame() == nil)
        splitter.append(Array("e\0\0fgh".utf8))
        #expect(try splitter.nextFrame() == Array("cde".utf8))
        #expect(try splitter.nextFrame() == [])
        #expect(try splitter.nextFrame() == nil)
        #expect(splitter.bufferedByteCount == 3)
        let length = try splitter.withNextFrame { $0.count }
        #expect(length == nil)
        splitter.append(Array("\0".utf8))
        #expect(try splitter.withNextFrame { Array($0) } == Array("fgh".utf8))
        // Exactly the limit is fine, one more byte is not, whether or not the NUL has arrived.
        splitter.append(Array("12345678\0".utf8))
        #expect(try splitter.nextFrame()?.count == 8)
        splitter.append(Array("123456789".utf8))
        #expect(throws: VarlinkError.self) { try splitter.nextFrame() }
        var other = VarlinkFrameSplitter(maxFrameSize: 8)
        other.append(Array("123456789\0".utf8))
        #expect(throws: VarlinkError.self) { try other.nextFrame() }
    }

    @Test func frameSplitterByteByByte() throws {
        var stream: [UInt8] = []
        let calls = (0..<50).map { VarlinkCall(method: "a.b.M\($0)", parameters: ["i": .int(Int64($0))]) }
        for call in calls { call.encode(into: &stream) }
        var splitter = VarlinkFrameSplitter(maxFrameSize: 1000)
        var received: [VarlinkCall] = []
        for chunk in stride(from: 0, to: stream.count, by: 7) {
            splitter.append(Array(stream[chunk..<min(chunk + 7, stream.count)]))
            while let frame = try splitter.nextFrame() { received.append(try VarlinkCall(parsing: frame)) }
        }
        #expect(received == calls)
        #expect(splitter.bufferedByteCount == 0)
    }

    @Test("receive reads frames in place in pieces of any size, keeps what follows a stop, and refuses long frames")
    func frameSplitterReceive() throws {
        var stream: [UInt8] = []
        let calls = (0..<50).map { VarlinkCall(method: "a.b.M\($0)", parameters: ["i": .int(Int64($0))]) }
        for call in calls { call.encode(into: &stream) }
        for size in [1, 7, 64, stream.count] {
            var splitter = VarlinkFrameSplitter(maxFrameSize: 1000)
            var received: [VarlinkCall] = []
            for chunk in stride(from: 0, to: stream.count, by: size) {
                let piece = Array(stream[chunk..<min(chunk + size, stream.count)])
                let all = try piece.withUnsafeBytes { bytes in
                    try splitter.receive(bytes) { frame throws(VarlinkError) in
                        received.append(try VarlinkCall(parsing: Array(frame)))
                        return true
                    }
                }
                #expect(all)
            }
            #expect(received == calls, "pieces of \(size)")
            #expect(splitter.bufferedByteCount == 0)
        }

        // A stop keeps the frames after it, and they come next.
        var splitter = VarlinkFrameSplitter(maxFrameSize: 8)
        var seen: [[UInt8]] = []
        let stopped = try Array("ab\0cd\0ef".utf8).withUnsafeBytes { bytes in
            try splitter.receive(bytes) { frame in
                seen.append(Array(frame))
                return false
            }
        }
        #expect(!stopped && seen == [Array("ab".utf8)] && splitter.bufferedByteCount == 5)
        #expect(try splitter.nextFrame() == Array("cd".utf8))
        _ = try Array("\0".utf8).withUnsafeBytes { bytes in
            try splitter.receive(bytes) { frame in
                seen.append(Array(frame))
                return true
            }
        }
        #expect(seen == [Array("ab".utf8), Array("ef".utf8)])

        // Longer than the limit, whether read in place or after held bytes.
        var fresh = VarlinkFrameSplitter(maxFrameSize: 8)
        #expect(throws: VarlinkError.self) {
            try Array("123456789\0".utf8).withUnsafeBytes { try fresh.receive($0) { _ in true } }
        }
        var held = VarlinkFrameSplitter(maxFrameSize: 8)
        _ = try Array("1234".utf8).withUnsafeBytes { try held.receive($0) { _ in true } }
        #expect(held.bufferedByteCount == 4)
        #expect(throws: VarlinkError.self) {
            try Array("56789".utf8).withUnsafeBytes { try held.receive($0) { _ in true } }
        }
    }

    /// Seeded mutations of a valid call: always a call or a protocol error, never a crash.
    @Test func mutatedCallsNeverCrash() {
        var generator = SplitMix64(seed: 0xCA11)
        let seed = Array(
            #"{"method":"io.beacon.Properties.Set","parameters":{"key":"a.b","value":[1,{"x":"é"}]},"more":true}"#.utf8)
        var calls = 0
        var errors = 0
        for _ in 0..<3000 {
            var input = seed
            generator.mutate(&input)
            do {
                let call = try VarlinkCall(parsing: input, limits: JSONLimits(maxDepth: 4, maxBytes: 4096))
                #expect(VarlinkNames.isValidQualifiedMemberName(call.method))
                calls += 1
            } catch {
                #expect(error.isProtocolError)
                #expect(error.parameters["reason"]?.stringValue?.isEmpty == false)
                errors += 1
            }
        }
        #expect(calls > 0 && errors > 0)
    }
}
