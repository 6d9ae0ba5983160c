import Logging
import NIOCore
import Varlink

/// One admitted connection as its reader sees it: the connection and the service's answers to what happens on
/// it, made by the server's core for its service.
///
/// The reader is not generic, and so it runs code compiled for no service in particular; the closures here are
/// made in code compiled for the concrete service, so that a call costs no look-up of the service's types.
final class VarlinkEndpoint {
    let connection: VarlinkConnection
    /// Answers a call read in place and returns true, or returns false having done nothing: the frame is then
    /// parsed and given to ``dispatchCall``. The service's ``VarlinkService/frameHandler(on:client:)``, made in the
    /// service's own module, so that the per-call path of the methods it reads so is compiled for the concrete
    /// service.
    let dispatchFrame: (UnsafeRawBufferPointer, JSONLimits) -> Bool
    /// Answers a parsed call.
    let dispatchCall: (VarlinkCall) -> Void
    /// The connection closed.
    let closed: () -> Void
    /// The connection's queued output went below the low watermark again.
    let becameWritable: () -> Void

    init(
        connection: VarlinkConnection,
        inPlace: VarlinkFrameHandler?,
        dispatchCall: @escaping (VarlinkCall) -> Void,
        closed: @escaping () -> Void,
        becameWritable: @escaping () -> Void
    ) {
        self.connection = connection
        // Not `inPlace?.answer ?? ...`: through the generic operator the closure would be called through two
        // reabstraction thunks per call (39 instructions of a Get, scripts/callgrind-ops.sh).
        if let inPlace {
            self.dispatchFrame = inPlace.answer
        } else {
            self.dispatchFrame = { _, _ in false }
        }
        self.dispatchCall = dispatchCall
        self.closed = closed
        self.becameWritable = becameWritable
    }
}

/// How a service answers calls read in place, without parsing them into a ``VarlinkCall`` first: from the
/// message's bytes, with no dictionary made. Beacon's daemon reads its busiest methods this way; the type is
/// public so that ``VarlinkService`` can name it, and made within this package only.
public struct VarlinkFrameHandler {
    /// Answers the call in a message (without its NUL), read with the limits given, and returns true; or returns
    /// false having done nothing, and the call is parsed and handed to ``VarlinkService/handle(_:on:client:)``.
    /// Made with ``VarlinkConnection/answerInPlace(_:limits:_:)``.
    package let answer: (UnsafeRawBufferPointer, JSONLimits) -> Bool

    package init(_ answer: @escaping (UnsafeRawBufferPointer, JSONLimits) -> Bool) {
        self.answer = answer
    }
}

/// Memory held on behalf of each uid: unfinished messages of its connections, and what the service charges to it
/// (a subscription's patterns, say), against ``VarlinkServerLimits/maxBytesPerUid``.
///
/// A service reaches it through ``VarlinkServerContext/budget`` and charges what a client makes it keep, so that one
/// uid's clients cannot take the memory of the others: charge before keeping (and refuse when the charge fails),
/// release when it goes. Used on the server's event loop only.
public final class VarlinkUidBudget {
    private var used: [UInt32: Int] = [:]
    /// The most bytes one uid may hold (``VarlinkServerLimits/maxBytesPerUid``).
    public package(set) var limit: Int

    package init(limit: Int) {
        self.limit = limit
    }

    /// Charges `bytes` to `uid`; returns false, charging nothing, when that would pass the limit.
    public func charge(_ bytes: Int, to uid: UInt32) -> Bool {
        let total = used[uid, default: 0] + bytes
        guard total <= limit else { return false }
        used[uid] = total
        return true
    }

    /// Gives back `bytes` charged to `uid`.
    public func release(_ bytes: Int, of uid: UInt32) {
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
    // Read for every call; used on the event loop only. VarlinkServer's `@exclusivity(unchecked)` properties (this
    // file's and those of the module's other files) save a Get 2,458 instructions in a release build without
    // `-enforce-exclusivity=unchecked` (as a package that depends on this one builds it): 7,202 -> 4,744, notification
    // 1->1 5,906 -> 5,435, pipelined Set 9,911 -> 9,113 (scripts/callgrind-ops.sh,
    // Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
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
