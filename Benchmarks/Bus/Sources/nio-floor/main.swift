import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// The least a SwiftNIO server does per varlink call: one event loop, one channel handler that splits the input at
// NUL bytes and answers every frame with the same reply, written once per read burst. It parses nothing and looks
// nothing up, so a round trip to it is SwiftNIO's own cost per message, the floor under any handler built on it.
//
// usage: nio-floor SOCKET_PATH   (serves until killed)

/// A Get reply of a 64-byte value, as beacond sends it.
let reply: [UInt8] =
    Array(
        ("{\"parameters\":{\"value\":{\"p\":\"" + String(repeating: "x", count: 64)
            + "\"},\"version\":2,\"persistent\":true}}").utf8) + [0]

final class FloorHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let answer: ByteBuffer
    private var owed = 0

    init(allocator: ByteBufferAllocator) {
        answer = allocator.buffer(bytes: reply)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        owed += bytes.withUnsafeReadableBytes { raw in raw.reduce(0) { $0 + ($1 == 0 ? 1 : 0) } }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard owed > 0 else { return }
        var out = context.channel.allocator.buffer(capacity: answer.readableBytes * owed)
        for _ in 0..<owed { out.writeImmutableBuffer(answer) }
        owed = 0
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
    }
}

guard CommandLine.arguments.count == 2 else {
    let usage = "usage: nio-floor SOCKET_PATH\n"
    _ = usage.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
let path = CommandLine.arguments[1]
unlink(path)
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try ServerBootstrap(group: group)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(FloorHandler(allocator: channel.allocator))
        }
    }
    .bind(unixDomainSocketPath: path)
    .wait()
try channel.closeFuture.wait()
