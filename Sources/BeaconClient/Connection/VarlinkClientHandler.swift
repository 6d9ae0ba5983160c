import BeaconProtocol
import NIOCore

/// Where the replies to one call go.
enum ReplyTarget: Sendable {
    /// One reply completes the promise; an error reply fails it with a ``BeaconError``.
    case single(EventLoopPromise<[String: JSONValue]>)
    /// Every reply is yielded until one arrives without `continues`; an error reply finishes the stream with
    /// a ``BeaconError``.
    case stream(AsyncThrowingStream<[String: JSONValue], any Error>.Continuation)
}

/// A call written to the channel together with where its replies go (`nil` for a oneway call).
struct OutgoingCall: Sendable {
    var call: VarlinkCall
    var target: ReplyTarget?
}

/// Encodes calls, splits the reply stream into frames and hands each reply to the oldest call waiting for one.
///
/// Varlink answers the calls of a connection in order, so a FIFO of reply targets is all the bookkeeping needed.
/// Runs on the channel's event loop only.
final class VarlinkClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = OutgoingCall
    typealias OutboundOut = ByteBuffer

    private var splitter: VarlinkFrameSplitter
    private let limits: JSONLimits
    private var waiting = CircularBuffer<ReplyTarget>()
    private var encodeBuffer: [UInt8] = []
    private var closed = false

    init(maxMessageSize: Int) {
        splitter = VarlinkFrameSplitter(maxFrameSize: maxMessageSize)
        limits = JSONLimits(maxDepth: 256, maxBytes: maxMessageSize)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let outgoing = unwrapOutboundIn(data)
        if closed {
            fail(outgoing.target, with: .connectionClosed)
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        encodeBuffer.removeAll(keepingCapacity: true)
        outgoing.call.encode(into: &encodeBuffer)
        if let target = outgoing.target { waiting.append(target) }
        var buffer = context.channel.allocator.buffer(capacity: encodeBuffer.count)
        buffer.writeBytes(encodeBuffer)
        context.write(wrapOutboundOut(buffer), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        buffer.withUnsafeReadableBytes { splitter.append($0) }
        do {
            while let frame = try splitter.nextFrame() {
                let reply = try VarlinkReply(parsing: frame, limits: limits)
                deliver(reply, context: context)
            }
        } catch {
            failAll(with: .invalidReply("the peer sent an invalid message", cause: error))
            context.close(promise: nil)
        }
    }

    private func deliver(_ reply: VarlinkReply, context: ChannelHandlerContext) {
        guard let target = waiting.first else {
            failAll(with: .invalidReply("a reply arrived while no call was waiting"))
            context.close(promise: nil)
            return
        }
        switch target {
        case .single(let promise):
            waiting.removeFirst()
            if let error = reply.varlinkError {
                promise.fail(BeaconError(error))
            } else {
                promise.succeed(reply.parameters)
            }
        case .stream(let continuation):
            if let error = reply.varlinkError {
                waiting.removeFirst()
                continuation.finish(throwing: BeaconError(error))
            } else if reply.continues {
                continuation.yield(reply.parameters)
            } else {
                waiting.removeFirst()
                continuation.yield(reply.parameters)
                continuation.finish()
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        failAll(with: .connectionClosed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(with: .connectionClosed)
        context.close(promise: nil)
    }

    private func failAll(with error: BeaconError) {
        closed = true
        while let target = waiting.popFirst() { fail(target, with: error) }
    }

    private func fail(_ target: ReplyTarget?, with error: BeaconError) {
        switch target {
        case .single(let promise): promise.fail(error)
        case .stream(let continuation): continuation.finish(throwing: error)
        case nil: break
        }
    }
}
