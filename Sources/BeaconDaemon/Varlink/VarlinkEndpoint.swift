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

/// Memory held on behalf of each uid: unfinished messages of its connections, and what the service charges to it
/// (a subscription's patterns, say), against ``VarlinkServerLimits/maxBytesPerUid``.
package final class VarlinkUidBudget {
    private var used: [UInt32: Int] = [:]
    var limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Charges `bytes` to `uid`; returns false, charging nothing, when that would pass the limit.
    package func charge(_ bytes: Int, to uid: UInt32) -> Bool {
        let total = used[uid, default: 0] + bytes
        guard total <= limit else { return false }
        used[uid] = total
        return true
    }

    /// Gives back `bytes` charged to `uid`.
    package func release(_ bytes: Int, of uid: UInt32) {
        let total = used[uid, default: 0] - bytes
        used[uid] = total > 0 ? total : nil
    }

}

/// What every channel handler of a server shares: the limits, the log, the end of tick, and the admission of
/// connections as ``VarlinkEndpoint``s.
final class VarlinkServerPort {
    let tick: VarlinkTick
    let logger: Logger
    let budget: VarlinkUidBudget
    let logLimiter = LogLimiter()
    // Read for every call; used on the event loop only.
    @exclusivity(unchecked) private(set) var limits: VarlinkServerLimits
    @exclusivity(unchecked) private(set) var jsonLimits: JSONLimits
    /// The error that tells a client why it is refused or closed, in the service's words. Set once by the core.
    var refusal: (VarlinkRefusal) -> VarlinkError = { _ in .permissionDenied() }
    /// Admits a connection, or returns the error to send before closing it. Set once by the core, before the first
    /// connection.
    var admit: (any VarlinkTransport, PeerCredentials) -> Result<VarlinkEndpoint, VarlinkError> = { _, _ in
        .failure(.permissionDenied())
    }

    init(tick: VarlinkTick, logger: Logger, limits: VarlinkServerLimits) {
        self.tick = tick
        self.logger = logger
        self.limits = limits
        self.jsonLimits = limits.jsonLimits
        self.budget = VarlinkUidBudget(limit: limits.maxBytesPerUid)
    }

    func update(limits: VarlinkServerLimits) {
        self.limits = limits
        jsonLimits = limits.jsonLimits
        budget.limit = limits.maxBytesPerUid
    }
}
