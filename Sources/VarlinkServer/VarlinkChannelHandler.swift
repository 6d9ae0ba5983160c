import NIOCore

/// Reads a SwiftNIO channel into a ``VarlinkReader``: the channel is the connection's transport
/// (``ChannelTransport``). The in-process tests serve their clients this way, on `EmbeddedChannel`s.
package final class VarlinkChannelHandler: ChannelInboundHandler {
    package typealias InboundIn = ByteBuffer

    private let port: VarlinkServerPort
    /// Stand for the peer's.
    private let credentials: PeerCredentials
    /// Made when the handler joins its pipeline, which gives it its context.
    private var reader: VarlinkReader!

    init(port: VarlinkServerPort, credentials: PeerCredentials) {
        self.port = port
        self.credentials = credentials
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        reader = VarlinkReader(port: port, transport: ChannelTransport(context: context))
    }

    package func channelActive(context: ChannelHandlerContext) {
        reader.activate(credentials: .success(credentials))
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        reader.closed()
        context.fireChannelInactive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reader.received(unwrapInboundIn(data))
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        reader.readComplete()
        context.fireChannelReadComplete()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        reader.readComplete()
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        reader.writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        reader.transportFailed(error)
    }
}
