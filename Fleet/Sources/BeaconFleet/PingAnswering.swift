import NIOCore
import NIOHTTP2

/// Answers the server's HTTP/2 PINGs before swift-nio-http2 sees them.
///
/// etcd's gRPC server (grpc-go) sends a PING to estimate the connection's bandwidth-delay product for every DATA
/// frame it receives while none of its PINGs is outstanding: about one per write. swift-nio-http2 counts every
/// PING and SETTINGS frame it receives, and closes the connection with ENHANCE_YOUR_CALM after 200 in 30 s, and
/// grpc-swift-nio-transport 2.9.2 gives a client no way to raise that limit
/// (`NIOHTTP2Handler.ConnectionConfiguration.controlFrameRateLimit`). Every call on the connection then failed
/// with `unavailable`, several times a minute under steady writes.
///
/// This handler sits between the socket (or TLS) and `NIOHTTP2Handler`, and acknowledges each PING that is not
/// itself an acknowledgement, with the same 8 bytes, as HTTP/2 requires of the receiver; the frame goes no
/// further. Every other frame passes unchanged, and so do the acknowledgements of the client's own keepalive
/// PINGs, which gRPC's connection handler waits for. Reads that hold no PING are passed on as they are, without a
/// copy.
final class PingAnsweringHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The start of a frame that did not arrive whole yet.
    private var partial: ByteBuffer?
    /// PINGs answered so far (for tests and diagnostics).
    private(set) var answered = 0

    static let frameHeaderLength = 9
    static let ping: UInt8 = 0x6
    static let ack: UInt8 = 0x1

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        if var held = partial {
            held.writeBuffer(&input)
            input = held
            partial = nil
        }
        // Passes on the frames before each PING as one slice, answers the PING, and goes on after it.
        var start = input.readerIndex
        var index = input.readerIndex
        var answeredNow = false
        while let header = Self.frameHeader(in: input, at: index) {
            let end = index + Self.frameHeaderLength + header.length
            guard end <= input.writerIndex else { break }
            if header.type == Self.ping, header.flags & Self.ack == 0, header.length == 8 {
                if index > start, let frames = input.getSlice(at: start, length: index - start) {
                    context.fireChannelRead(wrapInboundOut(frames))
                }
                var reply = context.channel.allocator.buffer(capacity: Self.frameHeaderLength + 8)
                reply.writeInteger(UInt16(0))
                reply.writeInteger(UInt8(8))
                reply.writeInteger(Self.ping)
                reply.writeInteger(Self.ack)
                reply.writeInteger(UInt32(0))
                if var opaque = input.getSlice(at: index + Self.frameHeaderLength, length: 8) {
                    reply.writeBuffer(&opaque)
                }
                context.write(NIOAny(reply), promise: nil)
                answered += 1
                answeredNow = true
                start = end
            }
            index = end
        }
        if answeredNow { context.flush() }
        if index > start, let frames = input.getSlice(at: start, length: index - start) {
            context.fireChannelRead(wrapInboundOut(frames))
        }
        if index < input.writerIndex {
            partial = input.getSlice(at: index, length: input.writerIndex - index)
        }
    }

    /// The length, type and flags of the frame whose header starts at `index`, when the header is all there.
    static func frameHeader(in buffer: ByteBuffer, at index: Int) -> (length: Int, type: UInt8, flags: UInt8)? {
        guard index + frameHeaderLength <= buffer.writerIndex,
            let high = buffer.getInteger(at: index, as: UInt16.self),
            let low = buffer.getInteger(at: index + 2, as: UInt8.self),
            let type = buffer.getInteger(at: index + 3, as: UInt8.self),
            let flags = buffer.getInteger(at: index + 4, as: UInt8.self)
        else { return nil }
        return (Int(high) << 8 | Int(low), type, flags)
    }

    /// Puts a handler in front of `channel`'s `NIOHTTP2Handler`; for gRPC's `onCreateTCPConnection`.
    static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(
                PingAnsweringHandler(), position: .before(try pipeline.handler(type: NIOHTTP2Handler.self)))
        }
    }
}
