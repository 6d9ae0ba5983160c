import BeaconProtocol
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Limits the varlink layer enforces for every connection.
public struct VarlinkServerLimits: Sendable, Hashable {
    /// Largest message accepted, in bytes without the NUL; a longer one closes the connection.
    public var maxMessageSize: Int
    /// Deepest JSON nesting accepted.
    public var maxJSONDepth: Int
    /// Queued output beyond which a connection is not writable (NIO's high watermark; the low one is half).
    public var maxQueuedBytes: Int
    /// The most connections of one uid.
    public var maxConnectionsPerUid: Int
    /// Uids served besides the server's own.
    public var allowedUIDs: Set<UInt32>

    public init(
        maxMessageSize: Int = 1 << 20,
        maxJSONDepth: Int = 64,
        maxQueuedBytes: Int = 4 << 20,
        maxConnectionsPerUid: Int = 16384,
        allowedUIDs: Set<UInt32> = []
    ) {
        self.maxMessageSize = maxMessageSize
        self.maxJSONDepth = maxJSONDepth
        self.maxQueuedBytes = maxQueuedBytes
        self.maxConnectionsPerUid = maxConnectionsPerUid
        self.allowedUIDs = allowedUIDs
    }

    var jsonLimits: JSONLimits { JSONLimits(maxDepth: maxJSONDepth, maxBytes: maxMessageSize) }
    var waterMark: ChannelOptions.Types.WriteBufferWaterMark {
        .init(low: max(1, maxQueuedBytes / 2), high: max(2, maxQueuedBytes))
    }
}

/// The event-loop side of a ``VarlinkServer``: admits connections, routes calls, answers `org.varlink.service`
/// and writes queued output once per read burst of a channel (or, for output queued outside one, once per tick).
public final class VarlinkServerCore {
    public let eventLoop: any EventLoop
    public let service: any VarlinkService
    public let info: VarlinkServiceInfo
    /// Where clients connect, `unix:PATH`.
    public let address: String
    let logger: Logger
    // The state below is used on the event loop only, and no access to it spans a call that could reach it again;
    // the properties read for every call skip the runtime exclusivity checks (`@exclusivity(unchecked)`), which
    // were a tenth of a Get's instructions.
    @exclusivity(unchecked) public private(set) var limits: VarlinkServerLimits
    @exclusivity(unchecked) private(set) var jsonLimits: JSONLimits
    private let ownUID = getuid()

    /// Interface name to the names of its methods.
    private var methods: [String: Set<String>] = [:]
    private var descriptions: [String: String] = [:]
    /// `interface.Method` of every method the service implements, checked without allocating.
    private var qualifiedMethods: Set<String> = []
    private var interfaceNames: [String] = []

    public private(set) var connections: [Int: VarlinkConnection] = [:]
    private var connectionsPerUID: [UInt32: Int] = [:]
    private var nextConnectionID = 1
    @exclusivity(unchecked) private var flushQueue: [VarlinkConnection] = []
    @exclusivity(unchecked) private var flushScheduled = false
    @exclusivity(unchecked) private var inWillFlush = false
    @exclusivity(unchecked) private var flushAgain = false
    /// Channels in a read burst (from its first `channelRead` to its `channelReadComplete`).
    @exclusivity(unchecked) private var channelsReading = 0
    /// A flush was asked for during a read burst: it runs when the burst ends instead of as a task.
    @exclusivity(unchecked) private var flushDeferred = false

    init(
        eventLoop: any EventLoop,
        service: any VarlinkService,
        info: VarlinkServiceInfo,
        address: String,
        limits: VarlinkServerLimits,
        logger: Logger
    ) throws {
        self.eventLoop = eventLoop
        self.service = service
        self.info = info
        self.address = address
        self.limits = limits
        self.jsonLimits = limits.jsonLimits
        self.logger = logger
        for (name, text) in [(VarlinkServiceIDL.name, VarlinkServiceIDL.text)] + service.interfaceDescriptions {
            let interface = try VarlinkInterface(parsing: text)
            guard interface.name == name else {
                throw VarlinkServerError(message: "interface text for \(name) declares \(interface.name)")
            }
            methods[name] = Set(interface.methods.map(\.name))
            if name != VarlinkServiceIDL.name {
                qualifiedMethods.formUnion(interface.methods.map { name + "." + $0.name })
            }
            descriptions[name] = text
            interfaceNames.append(name)
        }
        service.attached(to: self)
    }

    /// Applies new limits to the connections that exist and those to come.
    public func update(limits newLimits: VarlinkServerLimits) {
        limits = newLimits
        jsonLimits = newLimits.jsonLimits
        for connection in connections.values {
            try? connection.channel.syncOptions?.setOption(.writeBufferWaterMark, value: newLimits.waterMark)
        }
    }

    // MARK: Connections

    /// Admits a connection, or returns `nil` (and logs why) when its uid is not served or over its limit.
    func open(context: ChannelHandlerContext, credentials: PeerCredentials) -> VarlinkConnection? {
        guard credentials.uid == ownUID || limits.allowedUIDs.contains(credentials.uid) else {
            logger.notice(
                "refusing connection of a uid that is not served",
                metadata: ["uid": "\(credentials.uid)", "pid": "\(credentials.pid)"]
            )
            return nil
        }
        let count = connectionsPerUID[credentials.uid, default: 0]
        guard count < limits.maxConnectionsPerUid else {
            logger.warning(
                "refusing connection: maxConnectionsPerUid reached",
                metadata: ["uid": "\(credentials.uid)", "limit": "\(limits.maxConnectionsPerUid)"]
            )
            return nil
        }
        connectionsPerUID[credentials.uid] = count + 1
        let id = nextConnectionID
        nextConnectionID += 1
        let now = BeaconBus.nowUsec()
        let connection = VarlinkConnection(
            id: id,
            credentials: credentials,
            context: context,
            core: self,
            connectedUsec: now
        )
        connections[id] = connection
        try? context.channel.syncOptions?.setOption(.writeBufferWaterMark, value: limits.waterMark)
        service.connectionOpened(connection)
        return connection
    }

    func closed(_ connection: VarlinkConnection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        connection.markClosed()
        let uid = connection.credentials.uid
        let count = connectionsPerUID[uid, default: 1] - 1
        connectionsPerUID[uid] = count > 0 ? count : nil
        service.connectionClosed(connection)
    }

    /// Closes every connection after writing what is queued for it.
    public func closeAll() {
        for connection in connections.values {
            connection.close()
        }
    }

    // MARK: Calls

    /// Hands a call to the service read in place from `frame` when the service answers it that way; returns
    /// false, having done nothing, when the frame is to be parsed and given to ``dispatch(_:on:)``. The method name
    /// is not checked here: services answer only their own methods (see ``VarlinkCallView/methodIs(_:)``).
    func dispatch(frame: UnsafeRawBufferPointer, on connection: VarlinkConnection) -> Bool {
        guard let call = VarlinkCallView(parsing: frame, limits: jsonLimits) else { return false }
        if connection.isStreaming && !call.oneway { return false }
        connection.discardsReplies = call.oneway
        defer { connection.discardsReplies = false }
        return service.handle(call, on: connection)
    }

    func dispatch(_ call: VarlinkCall, on connection: VarlinkConnection) {
        if connection.isStreaming && !call.oneway {
            connection.fail(
                .protocolError("a call arrived while a streamed call is running on this connection"),
                logMessage: "call \(call.method) during a streamed call"
            )
            return
        }
        connection.discardsReplies = call.oneway
        defer { connection.discardsReplies = false }
        if qualifiedMethods.contains(call.method) {
            service.handle(call, on: connection)
            return
        }
        let interface = String(call.interface)
        if interface == VarlinkServiceIDL.name {
            handleServiceCall(call, on: connection)
        } else if methods[interface] == nil {
            connection.reply(error: .interfaceNotFound(interface))
        } else {
            connection.reply(error: .methodNotFound(call.method))
        }
    }

    private func handleServiceCall(_ call: VarlinkCall, on connection: VarlinkConnection) {
        switch call.member {
        case "GetInfo":
            connection.reply([
                "vendor": .string(info.vendor),
                "product": .string(info.product),
                "version": .string(info.version),
                "url": .string(info.url),
                "interfaces": .array(interfaceNames.map { .string($0) }),
            ])
        case "GetInterfaceDescription":
            guard case .string(let name)? = call.parameters["interface"] else {
                connection.reply(error: .invalidParameter("interface"))
                return
            }
            guard let text = descriptions[name] else {
                connection.reply(error: .interfaceNotFound(name))
                return
            }
            connection.reply(["description": .string(text)])
        default:
            connection.reply(error: .methodNotFound(call.method))
        }
    }

    // MARK: Output

    func queueForFlush(_ connection: VarlinkConnection) {
        if !connection.isQueuedForFlush {
            connection.isQueuedForFlush = true
            flushQueue.append(connection)
        }
        if !flushScheduled {
            flushScheduled = true
            runFlush()
        }
    }

    /// Makes sure ``VarlinkService/willFlush()`` and the writes run at the end of this tick (or, when called from
    /// ``VarlinkService/willFlush()``, once more in the next one).
    public func scheduleFlush() {
        if inWillFlush {
            flushAgain = true
            return
        }
        guard !flushScheduled else { return }
        flushScheduled = true
        runFlush()
    }

    /// Has ``flush()`` run at the end of the read burst in progress, or else at the end of this tick.
    private func runFlush() {
        if channelsReading > 0 {
            flushDeferred = true
            return
        }
        flushAtEndOfTick()
    }

    private func flushAtEndOfTick() {
        eventLoop.assumeIsolated().execute { [self] in
            flush()
        }
    }

    /// A channel began a read burst: what its calls queue is flushed when the burst ends.
    func readBurstBegan() {
        channelsReading += 1
    }

    /// A channel's read burst ended: flushes what it queued, unless the service batches work of the whole tick;
    /// then the flush runs at the end of the tick, after the other channels' reads.
    func readBurstEnded() {
        channelsReading -= 1
        if channelsReading == 0 && flushDeferred {
            flushDeferred = false
            if service.batchesAtEndOfTick {
                flushAtEndOfTick()
            } else {
                flush()
            }
        }
    }

    private func flush() {
        inWillFlush = true
        service.willFlush()
        inWillFlush = false
        let queue = flushQueue
        flushQueue.removeAll(keepingCapacity: true)
        flushScheduled = false
        if flushAgain {
            flushAgain = false
            scheduleFlush()
        }
        for connection in queue {
            connection.flush()
        }
    }
}

/// A server that cannot start or serve.
public struct VarlinkServerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
