import BeaconProtocol
import BeaconTestSupport
import Foundation
import Logging
import Testing
import VarlinkServer

@testable import BeaconDaemon

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Replies written straight to the socket (``SocketDescriptor``, `VarlinkConnection`), and the transport
/// (`SocketTransport`) holding what the socket does not take at once.
@Suite("Replies written to the socket directly")
struct DirectWriteTests {
    /// Runs `body` with a bus served on a Unix socket in a new directory, and its path.
    private func withServer(_ body: (VarlinkServer<BeaconBus>, String) async throws -> Void) async throws {
        var template = Array((NSTemporaryDirectory() + "beacon-direct-XXXXXX").utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/bus.sock"
        let server = try await VarlinkServer.start(
            listener: .unixPath(path),
            info: VarlinkServiceInfo(vendor: "Beacon", product: "test", version: "1", url: "")
        ) {
            try BeaconBus(
                storage: TestStorage(), limits: DaemonLimits(), historyLimit: 100, logger: Logger(label: "direct"))
        }
        do {
            try await body(server, path)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    @Test("every connection of a real server writes its replies to its socket directly, from the first")
    func descriptorFound() async throws {
        try await withServer { server, path in
            let first = try VarlinkTestClient(path: path)
            let second = try VarlinkTestClient(path: path)
            #expect(try first.set("direct.key", "value") > 0)
            let got = try second.parameters("io.beacon.Properties.Get", ["key": "direct.key"])
            #expect(got["property"]?["value"] == "value")
            let direct = try await server.withCore { core in core.connections.values.map(\.writesDirectly) }
            #expect(direct == [true, true])
        }
    }

    /// What socket-activated start-up waits for before finishing (`BeaconDaemonService`): the first answer.
    @Test("outputWritten returns once a tick has written to a client, or at its limit when none does")
    func outputWritten() async throws {
        try await withServer { server, path in
            // Without the write, this would return at its limit.
            let limit = Duration.seconds(30)
            let started = ContinuousClock.now
            let written = server.outputWritten(within: .seconds(30))
            // The loop has taken the request to be told before the client connects.
            _ = try await server.withCore { _ in 0 }
            let client = try VarlinkTestClient(path: path)
            #expect(try client.parameters("org.varlink.service.GetInfo")["product"]?.stringValue == "test")
            try await written.get()
            #expect(ContinuousClock.now - started < limit)
            // Nothing written: it returns at its limit.
            let idle = ContinuousClock.now
            try await server.outputWritten(within: .milliseconds(20)).get()
            #expect(ContinuousClock.now - idle >= .milliseconds(20))
        }
    }

    @Test("Gets pipelined faster than the client reads are all answered, whole and in order")
    func pipelinedLargeReplies() throws {
        let daemon = try TestDaemon()
        let writer = try daemon.connect()
        let keys = 20
        for index in 0..<keys {
            let letter = Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(index)))
            try writer.set("big.k\(index)", .string(String(repeating: letter, count: 60_000)))
        }
        // 100 replies of 60 kB: far more than the socket takes at once, so most wait in the transport, and
        // the daemon pauses the connection until the client reads.
        let reader = try daemon.connect()
        var calls: [UInt8] = []
        for _ in 0..<5 {
            for index in 0..<keys {
                VarlinkCall(method: "io.beacon.Properties.Get", parameters: ["key": .string("big.k\(index)")])
                    .encode(into: &calls)
            }
        }
        #expect(reader.sendRaw(calls))
        for round in 0..<5 {
            for index in 0..<keys {
                let reply = try reader.receive()
                let property = reply["property"]
                let letter = Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(index)))
                #expect(property?["key"] == .string("big.k\(index)"), "round \(round), reply \(index)")
                #expect(property?["value"] == .string(String(repeating: letter, count: 60_000)))
            }
        }
        #expect(try writer.set("after.pipelined", true) > 0)
    }

    @Test("changes a watcher reads late, far more than its socket holds, all arrive whole and in order")
    func lateWatcher() throws {
        let daemon = try TestDaemon()
        let watcher = try daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["late.**"]], more: true)
        let writer = try daemon.connect()
        // 40 changes of 60 kB: the first go to the socket directly until it is full, the rest wait in the
        // transport (under limits.maxQueuedBytes, so none is coalesced).
        let count = 40
        func value(_ index: Int) -> JSONValue {
            .string("\(index):" + String(repeating: "x", count: 60_000))
        }
        for index in 0..<count {
            try writer.set("late.k\(index)", value(index))
        }
        let changes = try watcher.receiveItems("changes", count: count)
        #expect(changes.count == count)
        for (index, change) in changes.enumerated() {
            #expect(change["key"] == .string("late.k\(index)"))
            #expect(change["value"] == value(index))
        }
    }
}
