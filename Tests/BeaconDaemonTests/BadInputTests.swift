import BeaconProtocol
import BeaconTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Malformed input")
struct BadInputTests {
    /// A client that keeps being served while others misbehave.
    final class Bystander {
        let commands: VarlinkTestClient
        let watcher: VarlinkTestClient
        var round: Int64 = 0

        init(_ daemon: TestDaemon) throws {
            commands = try daemon.connect()
            watcher = try daemon.connect()
            let first = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["bystander.**"]], more: true)
            guard first.error == nil else { throw TestFailure("Watch failed: \(first)") }
        }

        /// A Set, its Get and the watcher's change event all still work.
        func check() throws {
            round += 1
            try commands.set("bystander.round", .int(round))
            let value = try commands.parameters("io.beacon.Properties.Get", ["key": "bystander.round"])
            #expect(value["property"]?["value"]?.intValue == round)
            let change = try watcher.receiveItems("changes", count: 1)
            #expect(change.first?["value"]?.intValue == round)
        }
    }

    static func frame(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    @Test("garbage gets io.beacon.ProtocolError and a closed connection; other clients notice nothing")
    func garbage() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-message-size", "65536"])
        let bystander = try Bystander(daemon)
        try bystander.check()

        let cases: [(String, [UInt8])] = [
            ("not JSON", Self.frame("hello")),
            (
                "invalid UTF-8",
                Array("{\"method\":\"io.beacon.Properties.Get\",\"parameters\":{\"key\":\"".utf8) + [0xC3, 0x28, 0xFF]
                    + Array("\"}}".utf8) + [0]
            ),
            ("100k-deep nesting", Array(String(repeating: "[", count: 100_000).utf8) + [0]),
            (
                "deep nesting inside parameters",
                Array(
                    ("{\"method\":\"io.beacon.Properties.Set\",\"parameters\":{\"key\":\"a\",\"value\":"
                        + String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000) + "}}").utf8) + [0]
            ),
            ("not an object", Self.frame("[1,2,3]")),
            ("no method", Self.frame("{\"parameters\":{}}")),
            ("method of the wrong type", Self.frame("{\"method\":42}")),
            ("invalid method name", Self.frame("{\"method\":\"nodots\"}")),
            (
                "oversized message",
                Array("{\"method\":\"io.beacon.Properties.Set\",\"parameters\":{\"key\":\"a\",\"value\":\"".utf8)
                    + [UInt8](repeating: UInt8(ascii: "x"), count: 100_000) + Array("\"}}".utf8) + [0]
            ),
            ("trailing garbage", Self.frame("{\"method\":\"org.varlink.service.GetInfo\"} x")),
        ]
        for (name, bytes) in cases {
            let bad = try daemon.connect()
            bad.sendRaw(bytes)
            let reply = try bad.receive()
            #expect(reply.error == "io.beacon.ProtocolError", "\(name)")
            #expect(reply["reason"]?.stringValue?.isEmpty == false, "\(name)")
            #expect(bad.waitForClose(), "\(name): the connection should close")
            try bystander.check()
        }

        // An oversized message without any NUL is refused as soon as it passes the limit.
        let flood = try daemon.connect()
        flood.sendRaw([UInt8](repeating: UInt8(ascii: "{"), count: 70_000))
        let refused = try flood.receive()
        #expect(refused.error == "io.beacon.ProtocolError")
        #expect(flood.waitForClose())
        try bystander.check()

        // A truncated frame, then hang-up.
        let truncated = try daemon.connect()
        truncated.sendRaw(
            Array("{\"method\":\"io.beacon.Properties.Set\",\"parameters\":{\"key\":\"bystander.x\",\"va".utf8))
        truncated.close()
        try bystander.check()

        // A complete frame without its NUL, then hang-up: never executed.
        let unterminated = try daemon.connect()
        unterminated.sendRaw(
            Array(
                "{\"method\":\"io.beacon.Properties.Set\",\"parameters\":{\"key\":\"bystander.never\",\"value\":1}}"
                    .utf8))
        unterminated.close()
        try bystander.check()
        let never = try bystander.commands.call("io.beacon.Properties.Get", ["key": "bystander.never"])
        #expect(never.error == "io.beacon.Properties.KeyNotFound")

        // Valid calls after garbage in the same read are not executed.
        let mixed = try daemon.connect()
        mixed.sendRaw(
            Self.frame("garbage")
                + Self.frame(
                    "{\"method\":\"io.beacon.Properties.Set\",\"parameters\":{\"key\":\"bystander.after\",\"value\":1}}"
                ))
        #expect(try mixed.receive().error == "io.beacon.ProtocolError")
        #expect(mixed.waitForClose())
        let after = try bystander.commands.call("io.beacon.Properties.Get", ["key": "bystander.after"])
        #expect(after.error == "io.beacon.Properties.KeyNotFound")

        #expect(daemon.isRunning)
        #expect(daemon.log.contains("closing connection"))
    }

    @Test("pipelined calls are answered in order")
    func pipelining() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        var bytes: [UInt8] = []
        for index in 0..<500 {
            VarlinkCall(
                method: "io.beacon.Properties.Set",
                parameters: ["key": .string("p.k\(index % 7)"), "value": .int(Int64(index))]
            )
            .encode(into: &bytes)
            VarlinkCall(method: "io.beacon.Properties.Get", parameters: ["key": .string("p.k\(index % 7)")]).encode(
                into: &bytes)
        }
        client.sendRaw(bytes)
        var lastVersion: Int64 = 0
        for index in 0..<500 {
            let set = try client.receive()
            let version = try #require(set["version"]?.intValue)
            #expect(version > lastVersion)
            lastVersion = version
            let get = try client.receive()
            #expect(get["property"]?["value"]?.intValue == Int64(index))
            #expect(get["property"]?["version"]?.intValue == version)
        }
    }

    @Test("calls split across reads at any byte are answered in order")
    func splitReads() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        var bytes: [UInt8] = []
        for index in 0..<60 {
            VarlinkCall(
                method: "io.beacon.Properties.Set",
                parameters: ["key": .string("s.k\(index % 5)"), "value": ["n": .int(Int64(index))]]
            )
            .encode(into: &bytes)
            VarlinkCall(method: "io.beacon.Properties.Get", parameters: ["key": .string("s.k\(index % 5)")]).encode(
                into: &bytes)
        }
        // Chunks of 1 to 97 bytes, each written on its own, so that frames end anywhere inside a read.
        var offset = 0
        var size = 1
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            _ = client.sendRaw(Array(bytes[offset..<end]))
            offset = end
            size = size % 97 + 13
            if size % 3 == 0 { usleep(200) }
        }
        for index in 0..<60 {
            let set = try client.receive()
            #expect(set.error == nil)
            let get = try client.receive()
            #expect(get["property"]?["value"]?["n"]?.intValue == Int64(index))
        }
    }

    @Test("a call after a malformed message that spans reads is not executed")
    func garbageAcrossReads() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        let set = Self.frame(
            "{\"method\":\"io.beacon.Properties.Set\",\"parameters\":{\"key\":\"split.after\",\"value\":1}}")
        _ = client.sendRaw(Array("{\"method\":".utf8))
        usleep(50_000)
        _ = client.sendRaw(Array("42}".utf8) + [0] + set)
        #expect(try client.receive().error == "io.beacon.ProtocolError")
        #expect(client.waitForClose())
        let other = try daemon.connect()
        let after = try other.call("io.beacon.Properties.Get", ["key": "split.after"])
        #expect(after.error == "io.beacon.Properties.KeyNotFound")
    }
}
