import BeaconProtocol
import NIOCore
import Synchronization

/// Where the replies to one call go.
enum ReplyTarget: Sendable {
    /// One reply completes the promise; an error reply fails it with a ``BeaconError``.
    case single(EventLoopPromise<[String: JSONValue]>)
    /// Every reply frame goes to the receiver, on the event loop, until the call ends.
    case stream(any StreamReceiver)
}

/// Receives the replies of one streamed call, frame by frame, on the connection's event loop.
protocol StreamReceiver: AnyObject, Sendable {
    /// Takes one reply frame (without its NUL) and returns whether the call ended with it. Throws when the frame is
    /// not a valid reply; the connection is closed then.
    func receive(frame: UnsafeRawBufferPointer, limits: JSONLimits) throws(VarlinkError) -> Bool
    /// The call ended without a last reply: the connection closed.
    func fail(_ error: BeaconError)
}

/// A reply frame as a stream's decoder reads it.
enum DecodedReply<Reply> {
    case reply(Reply, continues: Bool)
    case error(VarlinkError)
}

/// What a streamed call's receiver is told, in order, on the connection's event loop.
enum StreamEvent<Reply: Sendable>: Sendable {
    /// A reply; `first` for the call's first reply, `last` when the call ends with it.
    case reply(Reply, first: Bool, last: Bool)
    /// The call ended with this error: the daemon's error reply, or the connection closed.
    case failed(BeaconError)
}

/// The receiver of one streamed call, which decodes each frame its own way. Replies reach it straight from the event
/// loop, with no hop through a task or a queue; it hears of at most one end (a last reply or a failure), and
/// nothing after it.
final class StreamSubscription<Reply: Sendable>: StreamReceiver {
    typealias Decode = @Sendable (UnsafeRawBufferPointer, JSONLimits) throws(VarlinkError) -> DecodedReply<Reply>

    private let state = Atomic<UInt8>(0)
    private let decode: Decode
    private let receive: @Sendable (StreamEvent<Reply>) -> Void
    private static var started: UInt8 { 1 }
    private static var finished: UInt8 { 2 }

    init(decode: @escaping Decode, receive: @escaping @Sendable (StreamEvent<Reply>) -> Void) {
        self.decode = decode
        self.receive = receive
    }

    // Reached through `any StreamReceiver`, so unspecialized. A property watch's frames go to code specialized for
    // its reply type before anything needs the metadata of a type built on `Reply` (`DecodedReply<Reply>`, looked
    // up in the runtime's cache for every frame: about 330 instructions).
    func receive(frame: UnsafeRawBufferPointer, limits: JSONLimits) throws(VarlinkError) -> Bool {
        if Reply.self == KeyWatchReply.self {
            return try unsafeDowncast(self, to: StreamSubscription<KeyWatchReply>.self).take(frame, limits: limits)
        }
        if Reply.self == WatchReply.self {
            return try unsafeDowncast(self, to: StreamSubscription<WatchReply>.self).take(frame, limits: limits)
        }
        return try take(frame, limits: limits)
    }

    /// Decodes one frame and hands it on; kept out of ``receive(frame:limits:)``, whose every call would otherwise
    /// look up the metadata of the decoded reply.
    @inline(never)
    private func take(_ frame: UnsafeRawBufferPointer, limits: JSONLimits) throws(VarlinkError) -> Bool {
        switch try decode(frame, limits) {
        case .error(let error):
            fail(BeaconError(error))
            return true
        case .reply(let reply, let continues):
            deliver(reply, last: !continues)
            return !continues
        }
    }

    /// Hands the end of the call to the receiver unless the subscription has ended.
    func fail(_ error: BeaconError) {
        guard state.exchange(Self.finished, ordering: .acquiringAndReleasing) != Self.finished else { return }
        receive(.failed(error))
    }

    /// Hands a reply to the receiver unless the subscription has ended, telling whether it is the first.
    private func deliver(_ reply: Reply, last: Bool) {
        let was =
            last
            ? state.exchange(Self.finished, ordering: .acquiringAndReleasing) : state.load(ordering: .acquiring)
        guard was != Self.finished else { return }
        if !last && was == 0 { state.store(Self.started, ordering: .releasing) }
        receive(.reply(reply, first: was == 0, last: last))
    }
}

extension StreamSubscription where Reply == [String: JSONValue] {
    /// Reads each frame as a plain reply: its output parameters.
    static var plainReplies: Decode {
        { (frame, limits) throws(VarlinkError) in
            let reply = try VarlinkReply(parsing: frame, limits: limits)
            if let error = reply.varlinkError { return .error(error) }
            return .reply(reply.parameters, continues: reply.continues)
        }
    }
}
