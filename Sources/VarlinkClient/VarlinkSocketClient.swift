import Dispatch
import Synchronization
import Varlink

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A varlink client of any service on a Unix socket, for async code and for generated clients
/// (`Certification.Client(try VarlinkSocketClient(socketPath: path))`).
///
/// Calls are made on one ``BlockingVarlinkConnection`` from a serial dispatch queue, in the order they are made; a
/// streamed call gets a connection and a queue of its own, as varlink asks (a stream occupies its connection). A
/// waiting call holds a dispatch thread: this is the client for tools, tests and services that make a few calls,
/// not for thousands of concurrent ones.
public final class VarlinkSocketClient: VarlinkCaller, @unchecked Sendable {
    /// The socket's path.
    public let socketPath: String
    private let timeout: Duration?
    private let limits: JSONLimits
    private let queue: DispatchQueue
    /// Used on `queue` only.
    private let connection: BlockingVarlinkConnection

    /// Connects to the socket at `socketPath`. `timeout` bounds the connect and each call (`nil`: no bound).
    public init(socketPath: String, timeout: Duration? = .seconds(30), limits: JSONLimits = .default)
        throws(BlockingVarlinkError)
    {
        self.socketPath = socketPath
        self.timeout = timeout
        self.limits = limits
        connection = try BlockingVarlinkConnection(socketPath: socketPath, timeout: timeout, limits: limits)
        queue = DispatchQueue(label: "varlink " + socketPath)
    }

    /// Closes the connection once the calls made before have been answered.
    public func close() {
        queue.async { [self] in connection.close() }
    }

    public func call(method: String, parameters: [String: JSONValue]) async throws -> [String: JSONValue] {
        let call = VarlinkCall(method: method, parameters: parameters)
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                continuation.resume(
                    with: Result { () throws(BlockingVarlinkError) in
                        try connection.call(call, timeout: timeout)
                    })
            }
        }
    }

    public func send(method: String, parameters: [String: JSONValue]) async throws {
        let call = VarlinkCall(method: method, parameters: parameters, oneway: true)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async { [self] in
                continuation.resume(
                    with: Result { () throws(BlockingVarlinkError) in
                        try connection.send(call, deadline: BlockingDeadline(timeout: timeout))
                    })
            }
        }
    }

    public func stream(method: String, parameters: [String: JSONValue]) -> AsyncThrowingStream<
        [String: JSONValue], any Error
    > {
        let (replies, continuation) = AsyncThrowingStream.makeStream(of: [String: JSONValue].self)
        let call = VarlinkCall(method: method, parameters: parameters, more: true)
        let stop = StreamStop()
        // Ending the iteration shuts the stream's connection down, which ends a wait for the next reply.
        continuation.onTermination = { _ in stop.stop() }
        DispatchQueue(label: "varlink stream " + method).async { [socketPath, timeout, limits] in
            do throws(BlockingVarlinkError) {
                let connection = try BlockingVarlinkConnection(socketPath: socketPath, timeout: timeout, limits: limits)
                defer { connection.close() }
                guard stop.attach(connection.fileDescriptor) else { return }
                defer { stop.detach() }
                try connection.send(call, deadline: BlockingDeadline(timeout: timeout))
                while true {
                    let reply = try connection.receive()
                    if let error = reply.varlinkError { throw BlockingVarlinkError(remote: error) }
                    continuation.yield(reply.parameters)
                    if !reply.continues { break }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return replies
    }

    public func remoteError(in error: any Error) -> VarlinkError? {
        (error as? BlockingVarlinkError)?.remoteError ?? (error as? VarlinkError)
    }
}

/// A stream's connection, shut down when its consumer stops iterating.
private final class StreamStop: Sendable {
    /// The connection's descriptor while the stream reads; `-1` once stopped.
    private let descriptor = Mutex<Int32?>(nil)

    /// Notes the stream's connection; false when the consumer stopped already.
    func attach(_ fileDescriptor: Int32) -> Bool {
        descriptor.withLock { current in
            guard current != -1 else { return false }
            current = fileDescriptor
            return true
        }
    }

    /// The stream is done with its connection, which it closes itself.
    func detach() {
        descriptor.withLock { $0 = -1 }
    }

    func stop() {
        descriptor.withLock { current in
            if let open = current, open >= 0 { _ = shutdown(open, Int32(SHUT_RDWR)) }
            current = -1
        }
    }
}
