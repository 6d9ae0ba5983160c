import BeaconEventLoop
import Logging
import NIOCore
import Synchronization
import Varlink

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
    /// The most memory the connections of one uid may hold in unfinished messages and in what their service
    /// charges to the uid (``VarlinkUidBudget``).
    public var maxBytesPerUid: Int
    /// How long a message may stay unfinished (its NUL not yet received) before the connection is closed.
    public var frameTimeout: Duration

    public init(
        maxMessageSize: Int = 1 << 20,
        maxJSONDepth: Int = 64,
        maxQueuedBytes: Int = 4 << 20,
        maxConnectionsPerUid: Int = 16384,
        allowedUIDs: Set<UInt32> = [],
        maxBytesPerUid: Int = 64 << 20,
        frameTimeout: Duration = .seconds(30)
    ) {
        self.maxMessageSize = maxMessageSize
        self.maxJSONDepth = maxJSONDepth
        self.maxQueuedBytes = maxQueuedBytes
        self.maxConnectionsPerUid = maxConnectionsPerUid
        self.allowedUIDs = allowedUIDs
        self.maxBytesPerUid = maxBytesPerUid
        self.frameTimeout = frameTimeout
    }

    var jsonLimits: JSONLimits { JSONLimits(maxDepth: maxJSONDepth, maxBytes: maxMessageSize) }
    var waterMark: ChannelOptions.Types.WriteBufferWaterMark {
        .init(low: max(1, maxQueuedBytes / 2), high: max(2, maxQueuedBytes))
    }
}

/// The interfaces a server serves: `org.varlink.service` and the service's own, checked to parse.
package struct VarlinkInterfaceTable {
    /// Interface name to the names of its methods.
    private(set) var methods: [String: Set<String>] = [:]
    private(set) var descriptions: [String: String] = [:]
    /// `interface.Method` of every method the service implements, checked without allocating.
    private(set) var qualifiedMethods: Set<String> = []
    private(set) var names: [String] = []

    init(service descriptions: [(name: String, description: String)]) throws {
        let all = [(VarlinkServiceInterface.name, VarlinkServiceInterface.description)] + descriptions
        for (name, text) in all {
            let interface = try VarlinkInterface(parsing: text)
            guard interface.name == name else {
                throw VarlinkServerError(message: "interface text for \(name) declares \(interface.name)")
            }
            methods[name] = Set(interface.methods.map(\.name))
            if name != VarlinkServiceInterface.name {
                qualifiedMethods.formUnion(interface.methods.map { name + "." + $0.name })
            }
            self.descriptions[name] = text
            names.append(name)
        }
    }

    /// The last table made by ``parsed(_:)``, with the texts it was made from.
    private static let last = Mutex<(texts: [(name: String, description: String)], table: Result<Self, any Error>)?>(
        nil)

    /// The table of `descriptions`, parsed once for as long as they are the last ones asked for. A program may
    /// ask on another thread ahead of the server's start (``BeaconDaemon/prepare()``): the server then finds the
    /// table made, or waits for it.
    package static func parsed(_ descriptions: [(name: String, description: String)]) throws -> Self {
        try last.withLock { last in
            if let last, last.texts.elementsEqual(descriptions, by: { $0 == $1 }) { return try last.table.get() }
            let table = Result { try Self(service: descriptions) }
            last = (descriptions, table)
            return try table.get()
        }
    }
}

/// The event-loop side of a ``VarlinkServer``: admits connections, routes calls to its service, and answers
/// `org.varlink.service`. Output is written at the end of the tick (``VarlinkTick``).
package final class VarlinkServerCore<Service: VarlinkService> {
    package let eventLoop: any EventLoop
    package let service: Service
    package let info: VarlinkServiceInfo
    /// Where clients connect, `unix:PATH`.
    package let address: String
    let logger: Logger
    package let tick: ServiceTick<Service>
    /// What the channel handlers share.
    let port: VarlinkServerPort
    package var limits: VarlinkServerLimits { port.limits }
    private let ownUID = getuid()
    private let interfaces: VarlinkInterfaceTable
    /// The service's name for a protocol violation (``VarlinkService/protocolErrorName``).
    private let protocolErrorName: String?

    package private(set) var connections: [Int: VarlinkConnection] = [:]
    private var connectionsPerUID: [UInt32: Int] = [:]
    private var nextConnectionID = 1

    package init(
        eventLoop: any EventLoop,
        service: Service,
        info: VarlinkServiceInfo,
        address: String,
        limits: VarlinkServerLimits,
        logger: Logger
    ) throws {
        self.eventLoop = eventLoop
        self.service = service
        self.info = info
        self.address = address
        self.logger = logger
        self.interfaces = try VarlinkInterfaceTable.parsed(service.interfaceDescriptions)
        self.protocolErrorName = service.protocolErrorName
        let tick = ServiceTick(eventLoop: eventLoop, service: service)
        self.tick = tick
        port = VarlinkServerPort(tick: tick, logger: logger, limits: limits)
        // The core owns the port: these run while it lives. Held weakly all the same, so that a callback that
        // outlived it would find nothing rather than freed memory.
        port.refusal = { [weak service] in service?.error(refusing: $0) ?? .permissionDenied() }
        port.admit = { [weak self] transport, credentials in
            guard let self else { return .failure(.permissionDenied()) }
            return self.open(transport: transport, credentials: credentials)
        }
        service.attached(
            to: VarlinkServerContext(eventLoop: eventLoop, address: address, budget: port.budget, tick: tick))
    }

    /// Applies new limits to the connections that exist and those to come.
    package func update(limits newLimits: VarlinkServerLimits) {
        port.update(limits: newLimits)
        for connection in connections.values {
            connection.transport.setWaterMark(newLimits.waterMark)
        }
    }

    /// Serves `descriptor`, a connection just accepted: it is read on `loop` once its peer is admitted.
    func accept(_ descriptor: Int32, on loop: EpollEventLoop) {
        let transport = SocketTransport(descriptor: descriptor, loop: loop)
        let reader = VarlinkReader(port: port, transport: transport)
        transport.reader = reader
        guard transport.open() else { return }
        reader.activate(credentials: PeerCredentials.of(descriptor: descriptor))
    }

    /// The handler a SwiftNIO channel's pipeline reads with (in-process tests): `credentials` stand for the peer's.
    package func makeHandler(credentials: PeerCredentials) -> VarlinkChannelHandler {
        VarlinkChannelHandler(port: port, credentials: credentials)
    }

    // MARK: Connections

    /// Admits a connection, or returns the error that says why not (and logs it) when its uid is not served or
    /// over its limit.
    private func open(
        transport: any VarlinkTransport,
        credentials: PeerCredentials
    ) -> Result<VarlinkEndpoint, VarlinkError> {
        guard credentials.uid == ownUID || limits.allowedUIDs.contains(credentials.uid) else {
            port.logLimiter.log(
                logger, .notice, source: "uid \(credentials.uid)", reason: "uid not served",
                "refusing connection of a uid that is not served",
                metadata: ["uid": "\(credentials.uid)", "pid": "\(credentials.pid)"]
            )
            return .failure(service.error(refusing: .uidNotServed(credentials.uid)))
        }
        let count = connectionsPerUID[credentials.uid, default: 0]
        guard count < limits.maxConnectionsPerUid else {
            port.logLimiter.log(
                logger, .warning, source: "uid \(credentials.uid)", reason: "maxConnectionsPerUid reached",
                "refusing connection: maxConnectionsPerUid reached",
                metadata: ["uid": "\(credentials.uid)", "limit": "\(limits.maxConnectionsPerUid)"]
            )
            return .failure(service.error(refusing: .connectionLimit(maximum: limits.maxConnectionsPerUid)))
        }
        connectionsPerUID[credentials.uid] = count + 1
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = VarlinkConnection(
            id: id,
            credentials: credentials,
            transport: transport,
            tick: tick,
            logger: logger,
            logLimiter: port.logLimiter,
            connectedUsec: WallClock.nowUsec(),
            protocolErrorName: protocolErrorName
        )
        connections[id] = connection
        transport.setWaterMark(limits.waterMark)
        let client = service.connectionOpened(connection)
        return .success(
            VarlinkEndpoint(
                connection: connection,
                inPlace: service.frameHandler(on: connection, client: client),
                dispatchCall: { [weak self] in self?.dispatch($0, on: connection, client: client) },
                closed: { [weak self] in self?.closed(connection, client: client) },
                becameWritable: { [weak self] in
                    self?.service.connectionBecameWritable(connection, client: client)
                }
            ))
    }

    func closed(_ connection: VarlinkConnection, client: Service.Client) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        connection.markClosed()
        let uid = connection.credentials.uid
        let count = connectionsPerUID[uid, default: 1] - 1
        connectionsPerUID[uid] = count > 0 ? count : nil
        service.connectionClosed(connection, client: client)
    }

    /// Closes every connection after handing what is queued for it to its transport (output the socket has not
    /// taken by then is dropped, as SwiftNIO's close drops it).
    package func closeAll() {
        for connection in connections.values {
            connection.close()
        }
    }

    // MARK: Calls

    func dispatch(_ call: VarlinkCall, on connection: VarlinkConnection, client: Service.Client) {
        if !connection.state.admitsCall(oneway: call.oneway) {
            connection.fail(
                .protocolError("a call arrived while a streamed call is running on this connection"),
                logMessage: "call \(call.method) during a streamed call"
            )
            return
        }
        connection.callBegins(oneway: call.oneway)
        defer { connection.state.callHandled() }
        if interfaces.qualifiedMethods.contains(call.method) {
            service.handle(call, on: connection, client: client)
            return
        }
        let interface = String(call.interface)
        if interface == VarlinkServiceInterface.name {
            handleServiceCall(call, on: connection)
        } else if interfaces.methods[interface] == nil {
            connection.reply(error: .interfaceNotFound(interface))
        } else {
            connection.reply(error: .methodNotFound(call.method))
        }
    }

    private func handleServiceCall(_ call: VarlinkCall, on connection: VarlinkConnection) {
        switch call.method {
        case VarlinkServiceInterface.Names.getInfo:
            connection.reply([
                "vendor": .string(info.vendor),
                "product": .string(info.product),
                "version": .string(info.version),
                "url": .string(info.url),
                "interfaces": .array(interfaces.names.map { .string($0) }),
            ])
        case VarlinkServiceInterface.Names.getInterfaceDescription:
            guard case .string(let name)? = call.parameters["interface"] else {
                connection.reply(error: .invalidParameter("interface"))
                return
            }
            guard let text = interfaces.descriptions[name] else {
                connection.reply(error: .interfaceNotFound(name))
                return
            }
            connection.reply(["description": .string(text)])
        default:
            connection.reply(error: .methodNotFound(call.method))
        }
    }
}

/// A server that cannot start or serve.
public struct VarlinkServerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
