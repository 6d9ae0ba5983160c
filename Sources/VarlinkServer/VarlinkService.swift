import NIOCore
import Varlink

/// What `org.varlink.service.GetInfo` reports about a service.
public struct VarlinkServiceInfo: Sendable, Hashable {
    public var vendor: String
    public var product: String
    public var version: String
    public var url: String

    public init(vendor: String, product: String, version: String, url: String) {
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
    }
}

/// What a service may ask of the server that serves it.
public struct VarlinkServerContext {
    /// The loop the server and its service run on.
    public let eventLoop: any EventLoop
    /// Where clients connect, `unix:PATH`.
    public let address: String
    /// Memory held for each uid; a service charges what its clients make it keep.
    public let budget: VarlinkUidBudget
    package let tick: VarlinkTick

    /// Has the service's ``VarlinkService/tickEnded()`` run at the end of this tick (or, when asked from it, once
    /// more in the next one).
    public func scheduleEndOfTick() {
        tick.workQueued()
    }

    /// The service's end-of-tick work failed (a commit, say): every reply queued in this tick for a call of this
    /// tick is replaced with `error`, one for each call, so that no client is told of what did not happen. Called
    /// from ``VarlinkService/tickEnded()``, before the output is written; replies written in earlier ticks are not
    /// taken back, and a stream begun in this tick must be ended by the service.
    public func failCallsOfThisTick(with error: VarlinkError) {
        for connection in tick.queuedConnections {
            connection.failCallsOfThisTick(with: error)
        }
    }
}

/// Why a server refused a connection.
public enum VarlinkRefusal: Sendable, Hashable {
    /// The peer's uid is neither the server's own nor one of ``VarlinkServerLimits/allowedUIDs``.
    case uidNotServed(UInt32)
    /// The peer's uid holds ``VarlinkServerLimits/maxConnectionsPerUid`` connections already.
    case connectionLimit(maximum: Int)
    /// The peer's uid would hold more than ``VarlinkServerLimits/maxBytesPerUid``.
    case uidBudget(maximum: Int)
}

/// The methods of one or more varlink interfaces, served by a ``VarlinkServer``.
///
/// Every requirement is called on the server's event loop, one at a time. A call is answered before
/// `handle` returns, through ``VarlinkConnection/reply(_:continues:)`` or ``VarlinkConnection/reply(error:)``, or
/// later after ``VarlinkConnection/deferReply()``; a streamed call sends its replies with `continues: true`, at any
/// time, and its last one without. The server checks that the interface and method exist; `org.varlink.service`
/// is answered by the server itself.
///
/// A service written against an interface's generated `Service` protocol hands each call to the generated
/// `dispatch(_:to:responder:)` with the connection as the responder.
public protocol VarlinkService: AnyObject, SendableMetatype {
    /// The service's state of one connection, made when the connection is admitted and handed back with each of
    /// its calls.
    associatedtype Client = Void

    /// The interfaces served, as IDL texts. Each must parse.
    var interfaceDescriptions: [(name: String, description: String)] { get }

    /// The server adopted the service, before the first connection is accepted.
    func attached(to server: VarlinkServerContext)

    /// A client connected and was admitted.
    func connectionOpened(_ connection: VarlinkConnection) -> Client

    /// A connection closed; no further output can be sent on it.
    func connectionClosed(_ connection: VarlinkConnection, client: Client)

    /// Answers a call of a method declared in one of ``interfaceDescriptions``.
    func handle(_ call: VarlinkCall, on connection: VarlinkConnection, client: Client)

    /// How calls of `connection` are answered read in place, before they are parsed, if the service reads any
    /// that way; `nil` (the default) hands every call to ``handle(_:on:client:)`` parsed. Asked once per connection.
    func frameHandler(on connection: VarlinkConnection, client: Client) -> VarlinkFrameHandler?

    /// Called once per event-loop tick in which output or work was queued, before the output is written: the place
    /// to make that tick's changes durable and to queue fan-out messages.
    func tickEnded()

    /// Whether ``tickEnded()`` has work that is better done once for every channel read in this tick, such as
    /// store writes to commit in one transaction or events to fan out in one message per subscriber. Then the
    /// output waits for the end of the tick; otherwise it is written as soon as the tick's read bursts end.
    var batchesAtEndOfTick: Bool { get }

    /// The connection's queued output went below the low watermark again.
    func connectionBecameWritable(_ connection: VarlinkConnection, client: Client)

    /// The error a refused client is sent before its connection is closed.
    func error(refusing reason: VarlinkRefusal) -> VarlinkError

    /// The name of the error a client that breaks the protocol is sent before its connection is closed (a message
    /// that is not a varlink message, one too long or left unfinished too long, a call while a stream runs), with
    /// `{"reason": …}`; `nil` (the default) closes the connection without a reply, as varlink's reference server
    /// does. Read once, when the server starts.
    var protocolErrorName: String? { get }
}

extension VarlinkService {
    public func attached(to server: VarlinkServerContext) {}
    public func connectionClosed(_ connection: VarlinkConnection, client: Client) {}
    public func frameHandler(on connection: VarlinkConnection, client: Client) -> VarlinkFrameHandler? { nil }
    public func tickEnded() {}
    public var batchesAtEndOfTick: Bool { false }
    public func connectionBecameWritable(_ connection: VarlinkConnection, client: Client) {}
    public func error(refusing reason: VarlinkRefusal) -> VarlinkError { .permissionDenied() }
    public var protocolErrorName: String? { nil }
}

extension VarlinkService where Client == Void {
    public func connectionOpened(_ connection: VarlinkConnection) {}
}
