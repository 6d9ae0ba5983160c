import BeaconBlockingClient
import BeaconProtocol
import NIOCore
import NIOPosix

/// One varlink connection over a Unix socket: pipelined calls, oneway calls, and one streamed call.
///
/// Calls may be made from any task; they are written in the order they are made and their replies are matched in
/// that order. A streamed call occupies the connection until its last reply (varlink's rule), so
/// ``BeaconClient`` opens a separate connection for each stream.
final class VarlinkClientConnection: Sendable {
    let channel: any Channel
    let address: BeaconAddress

    private init(channel: any Channel, address: BeaconAddress) {
        self.channel = channel
        self.address = address
    }

    /// Connects to `address`.
    static func connect(
        to address: BeaconAddress,
        maxMessageSize: Int,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(BeaconError) -> VarlinkClientConnection {
        let bootstrap = ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        VarlinkClientHandler(maxMessageSize: maxMessageSize))
                }
            }
        do {
            let channel = try await bootstrap.connect(unixDomainSocketPath: address.socketPath).get()
            return VarlinkClientConnection(channel: channel, address: address)
        } catch {
            throw .connectionFailed(address, cause: error)
        }
    }

    /// Whether the connection is still open.
    var isActive: Bool { channel.isActive }

    /// Completes when the connection has closed, for whatever reason.
    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Sends a call and returns a future of its single reply, without waiting: the call is written before the
    /// function returns to the event loop queue, so calls made one after another are sent in that order.
    func send(_ method: String, _ parameters: [String: JSONValue]) -> EventLoopFuture<[String: JSONValue]> {
        let promise = channel.eventLoop.makePromise(of: [String: JSONValue].self)
        let call = VarlinkCall(method: method, parameters: parameters)
        channel.writeAndFlush(OutgoingCall(call: call, target: .single(promise)), promise: nil)
        return promise.futureResult
    }

    /// Calls `method` and waits for its reply.
    func call(_ method: String, _ parameters: [String: JSONValue]) async throws(BeaconError) -> [String: JSONValue] {
        do {
            return try await send(method, parameters).get()
        } catch {
            throw .wrapping(error)
        }
    }

    /// Sends a oneway call: no reply comes, errors included.
    func sendOneway(_ method: String, _ parameters: [String: JSONValue]) {
        let call = VarlinkCall(method: method, parameters: parameters, oneway: true)
        channel.writeAndFlush(OutgoingCall(call: call, target: nil), promise: nil)
    }

    /// Starts a streamed call (`"more": true`). The stream yields each reply's parameters, finishes after the last
    /// one, and throws the error reply or ``BeaconError/Code/connectionClosed``. Ending the iteration (or
    /// cancelling the task that iterates) closes the connection: nothing else can use it while the call runs.
    func stream(
        _ method: String,
        _ parameters: [String: JSONValue]
    ) -> AsyncThrowingStream<[String: JSONValue], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [String: JSONValue].self)
        let channel = self.channel
        continuation.onTermination = { termination in
            if case .cancelled = termination { channel.close(promise: nil) }
        }
        let call = VarlinkCall(method: method, parameters: parameters, more: true)
        channel.writeAndFlush(OutgoingCall(call: call, target: .stream(continuation)), promise: nil)
        return stream
    }

    /// Closes the connection; calls waiting for replies fail with ``BeaconError/Code/connectionClosed``.
    func close() {
        channel.close(promise: nil)
    }
}
