import BeaconBlockingClient
import BeaconProtocol
import Signals
import Synchronization

/// A connection to the Beacon bus: commands, remote properties and notifications.
///
/// ```swift
/// let client = try await BeaconClient.connect()
/// try await client.set("user.name", to: "Ada")
/// let name = client.property("user.name", as: String.self, default: "")
/// label.reactive.text <~ name
/// ```
///
/// The client uses one connection for commands (``get(_:)``, ``set(_:to:ifVersion:ephemeral:)``, ...) and one
/// more for each active stream (a watched ``RemoteProperty``, an observed ``notifications(_:)`` signal), because
/// varlink runs one streamed call per connection. When the daemon goes away the client reconnects with backoff
/// and streams resubscribe, property watches with `since` so that no change is missed. ``connectionState``
/// tells whether the daemon is reachable.
///
/// All methods may be called from any thread or task.
public final class BeaconClient: Sendable {
    /// The daemon's address.
    public let address: BeaconAddress
    /// The options the client was created with.
    public let options: Options

    let link: CommandLink
    /// The stream connections open now, and how many ``suspend()`` calls no ``resume()`` answered yet: one lock,
    /// so that a stream opened while the client suspends is told exactly once.
    let streams = Mutex(StreamConnections())
    private let errorSubject: PassthroughSubject<BeaconError>
    /// Posts from every ``NotificationPoster`` of this client, in the order they are made.
    let posts: SerialCallQueue

    private init(address: BeaconAddress, options: Options) {
        self.address = address
        self.options = options
        link = CommandLink(address: address, options: options)
        let errors = PassthroughSubject<BeaconError>()
        errorSubject = errors
        posts = SerialCallQueue { error in errors.send(error) }
    }

    /// Connects to the daemon at `address`, by default the address from the environment (see
    /// ``BeaconAddress/default(environment:)``).
    ///
    /// Throws ``BeaconError/Code/notConnected`` when the daemon cannot be reached now. Once connected, the
    /// client survives restarts of the daemon.
    public static func connect(
        to address: BeaconAddress? = nil,
        options: Options = Options()
    ) async throws(BeaconError) -> BeaconClient {
        let resolved: BeaconAddress
        if let address { resolved = address } else { resolved = try .default() }
        let client = BeaconClient(address: resolved, options: options)
        // A daemon that is starting (its socket not there yet, or not answering) is waited for, up to
        // options.connectTimeout: every program would otherwise write this loop around connect.
        let deadline = ContinuousClock.now + options.connectTimeout
        var attempt = 0
        while true {
            do {
                _ = try await client.link.connection()
                return client
            } catch {
                let pause = options.reconnect.delay(forAttempt: attempt)
                guard error.code == .notConnected, ContinuousClock.now + pause <= deadline, !Task.isCancelled else {
                    client.close()
                    throw error
                }
                try? await Task.sleep(for: pause)
                attempt += 1
            }
        }
    }

    /// A client made at once, without waiting for the daemon: its calls and streams connect when they begin, and
    /// fail as ``connect(to:options:)`` would when no daemon answers then. For APIs that cannot wait, such as a
    /// shared `default()` object; a program that can should connect with ``connect(to:options:)``.
    public static func unconnected(
        to address: BeaconAddress? = nil, options: Options = Options()
    ) throws(BeaconError) -> BeaconClient {
        let resolved: BeaconAddress
        if let address { resolved = address } else { resolved = try .default() }
        return BeaconClient(address: resolved, options: options)
    }

    /// Closes every connection of the client. Streams complete, calls fail with
    /// ``BeaconError/Code/clientClosed``.
    public func close() {
        posts.finish()
        link.close()
        let open = streams.withLock { streams in
            defer { streams.connections.removeAll() }
            return Array(streams.connections.values)
        }
        for connection in open { connection.close() }
    }

    /// Whether the client is connected to the daemon; the current value first, then every change.
    public var connectionState: AnyProperty<ConnectionState> { link.state.readOnly }

    /// Errors of work that has no caller to throw to: writes of bindings into remote properties and posts from
    /// ``poster(_:object:deliverImmediately:)`` that failed, values that did not decode, notifications the daemon
    /// dropped, streams that ended on an error. ``RemoteProperty/errors`` has the errors of one property.
    public var errors: Signal<BeaconError> { errorSubject.toSignal() }

    func report(_ error: BeaconError) {
        errorSubject.send(error)
    }

    /// Reports on ``errors`` that a post of `name` was not sent because of what it carries (`reason`), with the
    /// code ``BeaconError/Code/encodingFailed``: for layers that build a post before handing it to the client.
    public func reportUnsentPost(_ name: String, reason: String) {
        report(
            .client(
                .encodingFailed, "EncodingFailed", "\(name) was not posted: \(reason)",
                parameters: ["name": .string(name)]))
    }

    // MARK: Raw varlink calls

    /// Calls any varlink method on the command connection and returns its output parameters.
    ///
    /// Throws the varlink error the daemon answers with as a ``BeaconError`` carrying its name and parameters.
    public func call(
        method: String,
        parameters: [String: JSONValue] = [:]
    ) async throws(BeaconError) -> [String: JSONValue] {
        try await link.connection().call(method, parameters)
    }

    /// Calls a method with `"oneway": true` on the command connection: the daemon sends no reply, not even an
    /// error. Returns once the call has been handed to the connection.
    public func send(method: String, parameters: [String: JSONValue] = [:]) async throws(BeaconError) {
        try await link.connection().sendOneway(method, parameters)
    }

    /// Calls a method with `"more": true` on a connection of its own and yields the output parameters of every
    /// reply; the sequence ends after the reply without `continues`, or throws the error reply.
    ///
    /// No reconnection: when the connection closes the sequence throws ``BeaconError/Code/connectionClosed``.
    /// Ending the iteration closes the connection.
    public func stream(
        method: String,
        parameters: [String: JSONValue] = [:]
    ) -> AsyncThrowingStream<[String: JSONValue], any Error> {
        let (output, continuation) = AsyncThrowingStream.makeStream(of: [String: JSONValue].self)
        let task = Task {
            do throws(BeaconError) {
                let connection = try await openStreamConnection()
                defer { closeStreamConnection(connection) }
                do {
                    for try await reply in connection.stream(method, parameters) {
                        continuation.yield(reply)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: BeaconError.wrapping(error))
                }
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return output
    }

    /// Opens a new connection for one streamed call; it is closed by ``close()`` too.
    func openStreamConnection() async throws(BeaconError) -> VarlinkClientConnection {
        if link.isClosed { throw .clientClosed }
        let connection: VarlinkClientConnection
        do throws(BeaconError) {
            connection = try await VarlinkClientConnection.connect(
                to: address, maxMessageSize: options.maxMessageSize)
        } catch {
            throw .notConnected(address, cause: error)
        }
        streams.withLock { streams in
            streams.connections[ObjectIdentifier(connection)] = connection
            // The client is suspended: so is the stream about to run here, before its first event. Sent under the
            // lock, as suspend() and resume() send theirs, so that a resume() cannot reach the connection first.
            if streams.suspensions > 0 { connection.sendOneway(Method.suspend, [:]) }
        }
        if link.isClosed {
            closeStreamConnection(connection)
            throw .clientClosed
        }
        return connection
    }

    func closeStreamConnection(_ connection: VarlinkClientConnection) {
        streams.withLock { _ = $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
        connection.close()
    }

    /// The number of stream connections open now.
    public var openStreamCount: Int { streams.withLock { $0.connections.count } }
}

/// The stream connections of a client and its suspension.
struct StreamConnections {
    var connections: [ObjectIdentifier: VarlinkClientConnection] = [:]
    var suspensions = 0
}
