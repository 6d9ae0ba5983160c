import NIOCore

/// The byte stream under one ``VarlinkConnection``: what the connection and its ``VarlinkReader`` need of a socket.
///
/// The reader and the connection hold the varlink logic (framing, limits, pauses, queued output, direct writes);
/// the transport only moves bytes and reports on itself. A SwiftNIO channel is one (``ChannelTransport``).
protocol VarlinkTransport: AnyObject {
    /// The loop the transport and its connection run on.
    var eventLoop: any EventLoop { get }
    /// Whether the output the transport holds is below its high watermark (once above, until below the low one).
    var isWritable: Bool { get }
    /// Output handed to the transport and not yet written to the socket; `nil` once the transport is closed.
    var heldBytes: Int? { get }
    /// Open: while it is, ``socketDescriptor`` is still this connection's socket.
    var isActive: Bool { get }
    /// Hands `buffer` to the transport, to be written in order after what it holds; `flush` writes it now.
    func write(_ buffer: ByteBuffer, flush: Bool)
    /// Writes what the transport holds.
    func flush()
    /// Writes `buffer`, then closes: how a refused client learns why.
    func sendAndClose(_ buffer: ByteBuffer)
    /// Closes at once; what the transport holds is dropped.
    func close()
    /// Reads from the socket, or stops reading: the peer's bytes then wait in the kernel.
    func setReading(_ reading: Bool)
    /// Sets the watermarks that ``isWritable`` follows.
    func setWaterMark(_ mark: ChannelOptions.Types.WriteBufferWaterMark)
    /// The socket's descriptor, to which the connection writes directly while the transport holds none of its
    /// output (``VarlinkConnection``); `nil` when all output goes through the transport.
    var socketDescriptor: Int32? { get }
    /// Completed once the transport is closed.
    var closeFuture: EventLoopFuture<Void> { get }
}

/// A SwiftNIO channel as a ``VarlinkTransport``: how the in-process tests serve clients on `EmbeddedChannel`s.
/// Output goes to the channel's head through the ``VarlinkChannelHandler``'s context, without entering the
/// pipeline from its tail; none is written around it.
final class ChannelTransport: VarlinkTransport {
    let channel: any Channel
    private let context: ChannelHandlerContext

    init(context: ChannelHandlerContext) {
        self.context = context
        channel = context.channel
    }

    var eventLoop: any EventLoop { channel.eventLoop }
    var isWritable: Bool { channel.isWritable }
    var heldBytes: Int? { try? channel.syncOptions?.getOption(.bufferedWritableBytes) }
    // SwiftNIO marks the channel inactive right after closing its descriptor, before any other code runs.
    var isActive: Bool { channel.isActive }
    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    func write(_ buffer: ByteBuffer, flush: Bool) {
        if flush {
            context.writeAndFlush(NIOAny(buffer), promise: nil)
        } else {
            context.write(NIOAny(buffer), promise: nil)
        }
    }

    func flush() {
        context.flush()
    }

    func sendAndClose(_ buffer: ByteBuffer) {
        let channel = self.channel
        context.writeAndFlush(NIOAny(buffer)).assumeIsolated().whenComplete { _ in channel.close(promise: nil) }
    }

    func close() {
        channel.close(promise: nil)
    }

    func setReading(_ reading: Bool) {
        channel.setOption(.autoRead, value: reading).whenFailure { _ in }
    }

    func setWaterMark(_ mark: ChannelOptions.Types.WriteBufferWaterMark) {
        try? channel.syncOptions?.setOption(.writeBufferWaterMark, value: mark)
    }

    var socketDescriptor: Int32? { nil }
}
