import BeaconTestSupport
import Foundation
import Testing
import Varlink
import VarlinkClient
import VarlinkServer

#if canImport(Glibc)
    import Glibc
#endif

/// A service of another vendor on `VarlinkServer`'s public API: it commits its tick's work at the end of the tick,
/// fails the tick's calls when the commit fails, and charges what it keeps to the caller's uid.
@Suite("VarlinkServer for a service with transactions of its own")
struct TransactionalServiceTests {
    static let idl = """
        interface org.example.ledger
        method Add(amount: int) -> (total: int)
        error OverLimit (limit: int)
        error Refused ()
        """

    /// A total with a limit: the tick's additions are kept (and charged) until the end of the tick, then committed
    /// all together, or not at all when they would pass the limit.
    final class Ledger: VarlinkService {
        let interfaceDescriptions = [(name: "org.example.ledger", description: TransactionalServiceTests.idl)]
        static let limit = 100
        static let chargePerEntry = 100_000
        private var context: VarlinkServerContext?
        private var total = 0
        private var pending: [(amount: Int, uid: UInt32)] = []

        func attached(to server: VarlinkServerContext) {
            context = server
        }

        func handle(_ call: VarlinkCall, on connection: VarlinkConnection, client: Void) {
            guard let context, case .int(let amount)? = call.parameters["amount"] else {
                connection.reply(error: .invalidParameter("amount"))
                return
            }
            let uid = connection.credentials.uid
            guard context.budget.charge(Self.chargePerEntry, to: uid) else {
                connection.reply(error: VarlinkError(name: "org.example.ledger.Refused"))
                return
            }
            pending.append((Int(amount), uid))
            connection.reply(["total": .int(Int64(total + pending.reduce(0) { $0 + $1.amount }))])
            context.scheduleEndOfTick()
        }

        var batchesAtEndOfTick: Bool { !pending.isEmpty }

        func tickEnded() {
            guard let context, !pending.isEmpty else { return }
            let added = pending.reduce(0) { $0 + $1.amount }
            if total + added > Self.limit {
                context.failCallsOfThisTick(
                    with: VarlinkError(
                        name: "org.example.ledger.OverLimit", parameters: ["limit": .int(Int64(Self.limit))]))
            } else {
                total += added
            }
            for entry in pending { context.budget.release(Self.chargePerEntry, of: entry.uid) }
            pending.removeAll()
        }
    }

    /// Sends `calls` in one write, so that the server reads them in one tick, and reads a reply to each.
    static func pipelined(_ calls: [VarlinkCall], on connection: BlockingVarlinkConnection) throws -> [VarlinkReply] {
        var bytes: [UInt8] = []
        for call in calls { call.encode(into: &bytes) }
        let written = bytes.withUnsafeBytes { write(connection.fileDescriptor, $0.baseAddress, $0.count) }
        #expect(written == bytes.count)
        return try calls.map { _ in try connection.receive(deadline: BlockingDeadline(timeout: .seconds(10))) }
    }

    static func add(_ amount: Int64) -> VarlinkCall {
        VarlinkCall(method: "org.example.ledger.Add", parameters: ["amount": .int(amount)])
    }

    @Test("a failed commit answers every call of its tick with the service's error; the next tick commits")
    func failedTick() async throws {
        let directory = try makeTemporaryDirectory("varlink-ledger")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/ledger"
        let server = try await VarlinkServer.start(
            listener: .unixPath(path),
            info: VarlinkServiceInfo(vendor: "Example", product: "ledger", version: "1", url: "https://example.org")
        ) { Ledger() }
        let connection = try BlockingVarlinkConnection(socketPath: path, timeout: .seconds(10))
        defer { connection.close() }

        let refused = try Self.pipelined([Self.add(60), Self.add(50)], on: connection)
        #expect(refused.map(\.error) == ["org.example.ledger.OverLimit", "org.example.ledger.OverLimit"])
        #expect(refused.first?.parameters["limit"] == 100)
        let kept = try Self.pipelined([Self.add(60), Self.add(30)], on: connection)
        #expect(kept.map(\.error) == [nil, nil])
        #expect(kept.map { $0.parameters["total"] } == [60, 90])
        #expect(try Self.pipelined([Self.add(11)], on: connection).first?.error == "org.example.ledger.OverLimit")
        #expect(try Self.pipelined([Self.add(10)], on: connection).first?.parameters["total"] == 100)
        await server.shutdown()
    }

    /// The ledger, with a name of its own for protocol violations.
    final class NamingLedger: VarlinkService {
        let ledger = Ledger()
        var interfaceDescriptions: [(name: String, description: String)] { ledger.interfaceDescriptions }
        var protocolErrorName: String? { "org.example.ledger.Garbled" }

        func handle(_ call: VarlinkCall, on connection: VarlinkConnection, client: Void) {
            ledger.handle(call, on: connection, client: client)
        }
    }

    @Test("a client that breaks the protocol is closed without a reply, or gets the error its service names")
    func protocolViolations() async throws {
        let directory = try makeTemporaryDirectory("varlink-ledger")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let info = VarlinkServiceInfo(vendor: "Example", product: "ledger", version: "1", url: "https://example.org")
        let plain = try await VarlinkServer.start(listener: .unixPath(directory + "/plain"), info: info) { Ledger() }
        let naming = try await VarlinkServer.start(listener: .unixPath(directory + "/naming"), info: info) {
            NamingLedger()
        }
        for (path, expected) in [(directory + "/plain", nil), (directory + "/naming", "org.example.ledger.Garbled")] {
            let connection = try BlockingVarlinkConnection(socketPath: path, timeout: .seconds(10))
            defer { connection.close() }
            let garbage = Array("{\"method\": 42}\u{0}".utf8)
            #expect(
                garbage.withUnsafeBytes { write(connection.fileDescriptor, $0.baseAddress, $0.count) } == garbage.count)
            let deadline = BlockingDeadline(timeout: .seconds(10))
            if let expected {
                let reply = try connection.receive(deadline: deadline)
                #expect(reply.error == expected)
                #expect(reply.parameters["reason"] != nil)
            }
            #expect(throws: BlockingVarlinkError.self) { _ = try connection.receive(deadline: deadline) }
        }
        await plain.shutdown()
        await naming.shutdown()
    }

    @Test("what the service charges to a uid is refused past maxBytesPerUid and given back at the end of the tick")
    func uidBudget() async throws {
        let directory = try makeTemporaryDirectory("varlink-ledger")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/ledger"
        // Room for two entries besides a message being read, not three.
        let limits = VarlinkServerLimits(maxBytesPerUid: 2 * Ledger.chargePerEntry + 50_000)
        let server = try await VarlinkServer.start(
            listener: .unixPath(path),
            info: VarlinkServiceInfo(vendor: "Example", product: "ledger", version: "1", url: "https://example.org"),
            limits: limits
        ) { Ledger() }
        let connection = try BlockingVarlinkConnection(socketPath: path, timeout: .seconds(10))
        defer { connection.close() }

        let replies = try Self.pipelined([Self.add(1), Self.add(2), Self.add(3)], on: connection)
        #expect(replies.map(\.error) == [nil, nil, "org.example.ledger.Refused"])
        #expect(replies.prefix(2).map { $0.parameters["total"] } == [1, 3])
        // The first two were committed and their charges given back: three more fit in three ticks.
        for amount: Int64 in [4, 5, 6] {
            #expect(try Self.pipelined([Self.add(amount)], on: connection).first?.error == nil)
        }
        await server.shutdown()
    }
}
