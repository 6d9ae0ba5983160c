import BeaconProtocol
import Logging
import NIOCore

/// One admitted connection as its channel handler sees it: the connection and the service's answers to what
/// happens on it, made by the server's core for its service.
///
/// The handler is not generic, and so NIO calls code compiled for no service in particular; the closures here
/// are made in code compiled for the concrete service, so that a call costs no look-up of the service's types.
final class VarlinkEndpoint {
    let connection: VarlinkConnection
    /// Answers a call read in place; false when the frame is to be parsed and given to ``dispatchCall``.
    let dispatchFrame: (UnsafeRawBufferPointer) -> Bool
    /// Answers a parsed call.
    let dispatchCall: (VarlinkCall) -> Void
    /// The connection closed.
    let closed: () -> Void
    /// The connection's queued output went below the low watermark again.
    let becameWritable: () -> Void

    init(
        connection: VarlinkConnection,
        dispatchFrame: @escaping (UnsafeRawBufferPointer) -> Bool,
        dispatchCall: @escaping (VarlinkCall) -> Void,
        closed: @escaping () -> Void,
        becameWritable: @escaping () -> Void
    ) {
        self.connection = connection
        self.dispatchFrame = dispatchFrame
        self.dispatchCall = dispatchCall
        self.closed = closed
        self.becameWritable = becameWritable
    }
}

/// What every channel handler of a server shares: the limits, the log, the end of tick, and the admission of
/// connections as ``VarlinkEndpoint``s.
final class VarlinkServerPort {
    let tick: VarlinkTick
    let logger: Logger
    // Read for every call; used on the event loop only.
    @exclusivity(unchecked) private(set) var limits: VarlinkServerLimits
    @exclusivity(unchecked) private(set) var jsonLimits: JSONLimits
    /// Admits a connection, or returns the error to send before closing it. Set once by the core, before the first
    /// connection.
    var admit: (ChannelHandlerContext, PeerCredentials) -> Result<VarlinkEndpoint, VarlinkError> = { _, _ in
        .failure(.permissionDenied())
    }

    init(tick: VarlinkTick, logger: Logger, limits: VarlinkServerLimits) {
        self.tick = tick
        self.logger = logger
        self.limits = limits
        self.jsonLimits = limits.jsonLimits
    }

    func update(limits: VarlinkServerLimits) {
        self.limits = limits
        jsonLimits = limits.jsonLimits
    }
}
