import BeaconProtocol
import Logging
import NIOCore
import NIOEmbedded
import Testing
import VarlinkServer

@testable import BeaconDaemon

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A store kept in memory that records every transaction, applies it to its rows, and fails the next ones on
/// demand.
final class TestStorage: PropertyStorage {
    struct InjectedFailure: Error, CustomStringConvertible {
        var description: String { "injected failure" }
    }

    let path = "memory"
    /// The transactions committed, in order.
    private(set) var transactions: [[StoreOperation]] = []
    /// How many of the next commits fail.
    var failures = 0
    /// The rows, as the committed transactions left them.
    private(set) var properties: [String: StoredProperty] = [:]
    private(set) var tombstones: [String: StoredTombstone] = [:]
    private(set) var ephemeral: Set<String> = []
    private(set) var meta: [String: Int64] = [:]

    func load() throws -> StoreContents {
        StoreContents(
            tombstones: Array(tombstones.values), ephemeralKeys: Array(ephemeral), meta: meta)
    }

    func property(_ key: String) throws -> StoredRow? {
        properties[key].map { StoredRow(property: $0, parses: true) }
    }

    func properties(from lower: String, below upper: String?, _ body: (StoredRow) -> Void) throws {
        for key in properties.keys.sorted() where key >= lower && upper.map({ key < $0 }) ?? true {
            body(StoredRow(property: properties[key]!, parses: true))
        }
    }

    /// How many times every row changed after a version was asked for.
    private(set) var changedAfterReads = 0

    func properties(changedAfter version: Int64, _ body: (StoredRow) -> Void) throws {
        changedAfterReads += 1
        for property in properties.values where property.version > version {
            body(StoredRow(property: property, parses: true))
        }
    }

    func rowVersion(of key: String) throws -> Int64? {
        max(properties[key]?.version ?? 0, tombstones[key]?.version ?? 0).nonZero
    }

    func highestVersion() throws -> Int64 {
        max(properties.values.map(\.version).max() ?? 0, tombstones.values.map(\.version).max() ?? 0)
    }

    /// The Sets a clean stop kept.
    var recentSets: RecentSets?

    func saveRecentSets(_ sets: RecentSets) -> Bool {
        recentSets = sets
        return true
    }

    func savedRecentSets() -> RecentSets? { recentSets }

    func commit(_ operations: [StoreOperation]) throws {
        if failures > 0 {
            failures -= 1
            throw InjectedFailure()
        }
        transactions.append(operations)
        for operation in operations {
            switch operation {
            case .upsertProperty(let property): properties[property.key] = property
            case .deleteProperty(let key): properties[key] = nil
            case .upsertTombstone(let tombstone): tombstones[tombstone.key] = tombstone
            case .deleteTombstone(let key): tombstones[key] = nil
            case .markEphemeral(let key): ephemeral.insert(key)
            case .unmarkEphemeral(let key): ephemeral.remove(key)
            case .pruneTombstones(let version): tombstones = tombstones.filter { $0.value.version > version }
            case .setMeta(let name, let value): meta[name] = value
            }
        }
    }

    /// The keys of the properties the committed transactions upserted, in order.
    var upsertedKeys: [String] {
        transactions.flatMap { operations in
            operations.compactMap { operation -> String? in
                if case .upsertProperty(let property) = operation { return property.key }
                return nil
            }
        }
    }
}

extension Int64 {
    fileprivate var nonZero: Int64? { self == 0 ? nil : self }
}

/// The bus and its varlink server on an `EmbeddedEventLoop`, with clients on `EmbeddedChannel`s: every part but
/// the socket, in one thread, one tick at a time.
final class InProcessBus {
    let loop = EmbeddedEventLoop()
    let storage = TestStorage()
    let bus: BeaconBus
    let core: VarlinkServerCore<BeaconBus>
    private var nextPID: Int32 = 1000

    init(limits: DaemonLimits = DaemonLimits()) throws {
        let logger = Logger(label: "in-process-bus")
        bus = try BeaconBus(storage: storage, limits: limits, historyLimit: 1000, logger: logger)
        core = try VarlinkServerCore(
            eventLoop: loop,
            service: bus,
            info: VarlinkServiceInfo(vendor: "Beacon", product: "test", version: "1", url: ""),
            address: "unix:/in-process",
            limits: VarlinkServerLimits(),
            logger: logger
        )
    }

    /// A connected client of the daemon's own uid.
    func connect() throws -> Client {
        nextPID += 1
        let credentials = PeerCredentials(uid: getuid(), gid: getgid(), pid: nextPID, command: "client\(nextPID)")
        let channel = EmbeddedChannel(handler: core.makeHandler(credentials: credentials), loop: loop)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/in-process")).wait()
        return Client(channel: channel, bus: self)
    }

    /// Runs what the event loop has queued: the end of the tick.
    func endTick() {
        loop.run()
    }

    /// A client: writes calls into its channel and reads the replies the server wrote.
    final class Client {
        let channel: EmbeddedChannel
        unowned let bus: InProcessBus

        init(channel: EmbeddedChannel, bus: InProcessBus) {
            self.channel = channel
            self.bus = bus
        }

        /// Sends `calls` in one read, as a client that pipelines them.
        func send(_ calls: [JSONValue]) throws {
            var bytes: [UInt8] = []
            for call in calls {
                call.encode(into: &bytes)
                bytes.append(0)
            }
            var buffer = channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            try channel.writeInbound(buffer)
        }

        func send(_ call: JSONValue) throws {
            try send([call])
        }

        /// Every write the server made to this client since the last read, one entry per write.
        func writes() throws -> [[JSONValue]] {
            var result: [[JSONValue]] = []
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
                result.append(try Self.messages(in: buffer))
            }
            return result
        }

        /// Every message written since the last read.
        func messages() throws -> [JSONValue] {
            try writes().flatMap { $0 }
        }

        /// The elements of the array parameter `member` (`changes`, `notifications`, `requests`) of every message
        /// written since the last read, in order.
        func items(_ member: String) throws -> [JSONValue] {
            try messages().compactMap { $0.parameters?[member]?.arrayValue }.flatMap { $0 }
        }

        static func messages(in buffer: ByteBuffer) throws -> [JSONValue] {
            let bytes = Array(buffer.readableBytesView)
            return try bytes.split(separator: 0, omittingEmptySubsequences: true).map { frame in
                try JSONValue(parsing: Array(frame))
            }
        }
    }
}

/// Calls as a client writes them.
enum Call {
    /// A call of `method` (its full name) with `parameters`.
    static func method(_ method: String, _ parameters: JSONValue, more: Bool = false) -> JSONValue {
        var call: [String: JSONValue] = ["method": .string(method), "parameters": parameters]
        if more { call["more"] = true }
        return .object(call)
    }

    static func set(_ key: String, _ value: JSONValue) -> JSONValue {
        ["method": "io.beacon.Properties.Set", "parameters": ["key": .string(key), "value": value]]
    }

    static func get(_ key: String) -> JSONValue {
        ["method": "io.beacon.Properties.Get", "parameters": ["key": .string(key)]]
    }

    static func watch(_ patterns: [String], old: Bool = false) -> JSONValue {
        [
            "method": "io.beacon.Properties.Watch", "more": true,
            "parameters": ["patterns": .array(patterns.map { .string($0) }), "old": .bool(old)],
        ]
    }

    static func post(_ name: String, _ userInfo: JSONValue) -> JSONValue {
        ["method": "io.beacon.Notifications.Post", "parameters": ["name": .string(name), "userInfo": userInfo]]
    }

    static func observe(_ patterns: [String]) -> JSONValue {
        [
            "method": "io.beacon.Notifications.Observe", "more": true,
            "parameters": ["patterns": .array(patterns.map { .string($0) })],
        ]
    }
}

extension JSONValue {
    /// The `error` of a reply.
    var errorName: String? { self["error"]?.stringValue }
    var parameters: JSONValue? { self["parameters"] }
}
