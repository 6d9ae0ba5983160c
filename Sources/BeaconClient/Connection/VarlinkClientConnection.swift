import BeaconBlockingClient
import BeaconProtocol
import NIOCore

/// One varlink connection over a Unix socket: pipelined calls, oneway calls, and one streamed call.
///
/// Calls may be made from any task; they are written in the order they are made and their replies are matched in
/// that order. A streamed call occupies the connection until its last reply (varlink's rule), so
/// ``BeaconClient`` opens a separate connection for each stream.
final class VarlinkClientConnection: Sendable {
    let socket: ClientSocket
    let address: BeaconAddress

    private init(socket: ClientSocket, address: BeaconAddress) {
        self.socket = socket
        self.address = address
    }

    /// Connects to `address`. The connect does not wait: when the daemon's listen queue is full, it fails at once.
    static func connect(to address: BeaconAddress, maxMessageSize: Int) async throws(BeaconError)
        -> VarlinkClientConnection
    {
        do {
            let clientLoop = try ClientLoop.shared()
            let descriptor = try UnixStreamSocket.connect(to: address.socketPath, timeout: .zero)
            let socket = ClientSocket(descriptor: descriptor, on: clientLoop, maxMessageSize: maxMessageSize)
            try await socket.start()
            return VarlinkClientConnection(socket: socket, address: address)
        } catch {
            throw .connectionFailed(address, cause: error)
        }
    }

    /// Whether the connection is still open.
    var isActive: Bool { socket.isActive }

    /// Completes when the connection has closed, for whatever reason.
    var closeFuture: EventLoopFuture<Void> { socket.closeFuture }

    /// Sends a call and returns a future of its single reply, without waiting: the call is written, or queued on
    /// the connection's loop, before the function returns, so calls made one after another are sent in that order.
    func send(_ method: String, _ parameters: [String: JSONValue]) -> EventLoopFuture<[String: JSONValue]> {
        let promise = socket.loop.makePromise(of: [String: JSONValue].self)
        socket.send(VarlinkCall(method: method, parameters: parameters), target: .single(promise))
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
        socket.send(VarlinkCall(method: method, parameters: parameters, oneway: true), target: nil)
    }

    /// Starts a streamed call (`"more": true`) whose replies `decode` reads and `receive` gets on the connection's
    /// event loop, in order: each reply, then at most one end (a reply with `last`, or a failure: the error reply
    /// or ``BeaconError/Code/connectionClosed``). Nothing else can use the connection while the call runs.
    func stream<Reply: Sendable>(
        _ method: String,
        _ parameters: [String: JSONValue],
        decode: @escaping StreamSubscription<Reply>.Decode,
        receive: @escaping @Sendable (StreamEvent<Reply>) -> Void
    ) {
        let subscription = StreamSubscription(decode: decode, receive: receive)
        socket.send(VarlinkCall(method: method, parameters: parameters, more: true), target: .stream(subscription))
    }

    /// ``stream(_:_:decode:receive:)`` as a sequence of the replies' parameters, which finishes after the last one and
    /// throws the error reply or ``BeaconError/Code/connectionClosed``. Ending the iteration (or cancelling the
    /// task that iterates) closes the connection.
    func stream(
        _ method: String,
        _ parameters: [String: JSONValue]
    ) -> AsyncThrowingStream<[String: JSONValue], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [String: JSONValue].self)
        let socket = self.socket
        continuation.onTermination = { termination in
            if case .cancelled = termination { socket.close() }
        }
        self.stream(method, parameters, decode: StreamSubscription.plainReplies) { event in
            switch event {
            case .reply(let parameters, _, let last):
                continuation.yield(parameters)
                if last { continuation.finish() }
            case .failed(let error):
                continuation.finish(throwing: error)
            }
        }
        return stream
    }

    /// Closes the connection; calls waiting for replies fail with ``BeaconError/Code/connectionClosed``.
    func close() {
        socket.close()
    }
}
