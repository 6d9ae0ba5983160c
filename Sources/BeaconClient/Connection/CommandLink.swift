import BeaconBlockingClient
import BeaconProtocol
import Dispatch
import NIOCore
import Signals
import Synchronization

/// Keeps the command connection: connects on demand (one attempt at a time, shared by every caller), notices when
/// the connection closes, reconnects with backoff and publishes the ``BeaconClient/ConnectionState``.
final class CommandLink: Sendable {
    private struct State {
        var connection: VarlinkClientConnection?
        var attempt: Task<Result<VarlinkClientConnection, BeaconError>, Never>?
        var reconnecting: Task<Void, Never>?
        var generation = 0
        var closed = false
        /// A connection attempt failed or a connection was lost at least once.
        var hadTrouble = false

        var published: BeaconClient.ConnectionState {
            if closed { return .closed }
            if connection?.isActive ?? false { return .connected }
            return hadTrouble ? .disconnected : .connecting
        }
    }

    let address: BeaconAddress
    let options: BeaconClient.Options
    /// The published connection state.
    let state: Property<BeaconClient.ConnectionState>
    private let locked = Mutex(State())
    /// The schema entries registered with ``register(_:)``, by key: registered again on every new connection.
    private let registered = Mutex<[String: JSONValue]>([:])
    /// Publishes state changes one at a time, each time the latest state, so that racing transitions cannot
    /// leave a stale value published.
    private let publisher = DispatchQueue(label: "io.beacon.client.connection-state")

    init(address: BeaconAddress, options: BeaconClient.Options) {
        self.address = address
        self.options = options
        state = Property(.connecting)
    }

    /// The open command connection, connecting first when there is none. Throws
    /// ``BeaconError/Code/notConnected`` when the connection attempt fails.
    func connection() async throws(BeaconError) -> VarlinkClientConnection {
        enum Next {
            case ready(VarlinkClientConnection)
            case wait(Task<Result<VarlinkClientConnection, BeaconError>, Never>)
            case closed
        }
        let next = locked.withLock { state -> Next in
            if state.closed { return .closed }
            if let connection = state.connection, connection.isActive { return .ready(connection) }
            if let attempt = state.attempt { return .wait(attempt) }
            let attempt = Task { await self.attemptConnection() }
            state.attempt = attempt
            return .wait(attempt)
        }
        switch next {
        case .ready(let connection):
            return connection
        case .closed:
            throw .clientClosed
        case .wait(let attempt):
            return try await attempt.value.get()
        }
    }

    private func attemptConnection() async -> Result<VarlinkClientConnection, BeaconError> {
        let result: Result<VarlinkClientConnection, BeaconError>
        do throws(BeaconError) {
            let connection = try await VarlinkClientConnection.connect(
                to: address, maxMessageSize: options.maxMessageSize)
            // A registration lasts as long as its connection: each new one registers again, before any call of the
            // client's runs on it.
            let schema = registered.withLock { $0 }
            if !schema.isEmpty {
                _ = try? await connection.call(Method.register, ["schema": .object(["keys": .object(schema)])])
            }
            result = .success(connection)
        } catch {
            result = .failure(.notConnected(address, cause: error))
        }
        enum Outcome {
            case connected(Int, VarlinkClientConnection)
            case failed
            case closedMeanwhile(VarlinkClientConnection)
        }
        let outcome = locked.withLock { state -> Outcome in
            state.attempt = nil
            guard case .success(let connection) = result else {
                state.hadTrouble = true
                return .failed
            }
            if state.closed { return .closedMeanwhile(connection) }
            state.connection = connection
            state.generation += 1
            return .connected(state.generation, connection)
        }
        switch outcome {
        case .connected(let generation, let connection):
            connection.closeFuture.whenComplete { _ in self.connectionLost(generation: generation) }
            publish()
            return result
        case .closedMeanwhile(let connection):
            connection.close()
            return .failure(.clientClosed)
        case .failed:
            publish()
            startReconnecting()
            return result
        }
    }

    private func publish() {
        publisher.async {
            let current = self.locked.withLock { $0.published }
            if self.state.value != current { self.state.set(current) }
        }
    }

    private func connectionLost(generation: Int) {
        let lost = locked.withLock { state -> Bool in
            guard state.generation == generation, !state.closed else { return false }
            state.connection = nil
            state.hadTrouble = true
            return true
        }
        guard lost else { return }
        publish()
        startReconnecting()
    }

    /// Starts the reconnection loop unless one runs: it retries with the backoff of the options until a
    /// connection is open again (made by the loop or by a call) or the client is closed.
    private func startReconnecting() {
        locked.withLock { state in
            guard !state.closed, state.reconnecting == nil else { return }
            state.reconnecting = Task { await self.reconnectLoop() }
        }
    }

    private func reconnectLoop() async {
        var attempt = 0
        while true {
            do {
                try await Task.sleep(for: options.reconnect.delay(forAttempt: attempt))
            } catch {
                break
            }
            let done = locked.withLock { state in
                state.closed || (state.connection?.isActive ?? false)
            }
            if done { break }
            if case .success = await attemptOnce() { break }
            attempt += 1
        }
        // A connection lost after the loop's last check found this loop still running and started none: start
        // one now, or nobody would reconnect.
        let lostMeanwhile = locked.withLock { state -> Bool in
            state.reconnecting = nil
            return !state.closed && !(state.connection?.isActive ?? false)
        }
        if lostMeanwhile { startReconnecting() }
    }

    private func attemptOnce() async -> Result<VarlinkClientConnection, BeaconError> {
        do throws(BeaconError) {
            return .success(try await connection())
        } catch {
            return .failure(error)
        }
    }

    /// Adds `entries` (schema entries by key) to the client's registration and registers the whole of it on the
    /// command connection. A registration the daemon refuses is taken back.
    func register(_ entries: [String: JSONValue]) async throws(BeaconError) {
        let previous = registered.withLock { registered in
            defer { registered.merge(entries) { $1 } }
            return registered
        }
        do throws(BeaconError) {
            let schema = registered.withLock { $0 }
            _ = try await connection().call(Method.register, ["schema": .object(["keys": .object(schema)])])
        } catch {
            registered.withLock { $0 = previous }
            throw error
        }
    }

    /// Closes the command connection and stops reconnecting.
    func close() {
        let (connection, reconnecting, attempt) = locked.withLock { state in
            state.closed = true
            defer {
                state.connection = nil
                state.reconnecting = nil
            }
            return (state.connection, state.reconnecting, state.attempt)
        }
        reconnecting?.cancel()
        attempt?.cancel()
        connection?.close()
        publish()
    }

    var isClosed: Bool { locked.withLock { $0.closed } }
}
