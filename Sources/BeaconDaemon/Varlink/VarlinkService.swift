import BeaconProtocol

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

/// The methods of one or more varlink interfaces, served by a ``VarlinkServer``.
///
/// Every requirement is called on the server's event loop, one at a time. A call is answered before
/// ``handle(_:on:)`` returns, through ``VarlinkConnection/reply(_:continues:)`` or
/// ``VarlinkConnection/reply(error:)``; a streamed call sends its first reply with `continues: true`, calls
/// ``VarlinkConnection/beginStream()``, and later sends further replies at any time. The server checks that the
/// interface and method exist; `org.varlink.service` is answered by the server itself.
public protocol VarlinkService: AnyObject {
    /// The interfaces served, as IDL texts. Each must parse.
    var interfaceDescriptions: [(name: String, description: String)] { get }

    /// The server adopted the service, before the first connection is accepted.
    func attached(to core: VarlinkServerCore)

    /// A client connected and was admitted.
    func connectionOpened(_ connection: VarlinkConnection)

    /// A connection closed; no further output can be sent on it.
    func connectionClosed(_ connection: VarlinkConnection)

    /// Answers a call of a method declared in one of ``interfaceDescriptions``.
    func handle(_ call: VarlinkCall, on connection: VarlinkConnection)

    /// Answers a call read in place, as ``handle(_:on:)`` would, when the service reads its method that way;
    /// otherwise returns false without doing anything, and the call is parsed and given to ``handle(_:on:)``.
    /// Only calls of the service's own methods, recognized with ``VarlinkCallView/methodIs(_:)``, may be answered:
    /// the method name of `call` is not checked otherwise.
    func handle(_ call: VarlinkCallView, on connection: VarlinkConnection) -> Bool

    /// Called once per event-loop tick in which output was queued, before it is written: the place to make that
    /// tick's changes durable and to queue fan-out messages.
    func willFlush()

    /// Whether ``willFlush()`` has work that is better done once for every channel read in this tick, such as
    /// store writes to commit in one transaction or events to fan out in one message per subscriber. Then the
    /// output waits for the end of the tick; otherwise it is written as soon as a channel's read burst ends.
    var batchesAtEndOfTick: Bool { get }

    /// The connection's queued output went below the low watermark again.
    func connectionBecameWritable(_ connection: VarlinkConnection)
}

extension VarlinkService {
    public func attached(to core: VarlinkServerCore) {}
    public func connectionOpened(_ connection: VarlinkConnection) {}
    public func connectionClosed(_ connection: VarlinkConnection) {}
    public func handle(_ call: VarlinkCallView, on connection: VarlinkConnection) -> Bool { false }
    public func willFlush() {}
    public var batchesAtEndOfTick: Bool { false }
    public func connectionBecameWritable(_ connection: VarlinkConnection) {}
}
