import NIOCore
import Varlink

/// Splits the byte stream of one connection into NUL-terminated messages, parses each as a varlink call and hands
/// it to the service through the connection's ``VarlinkEndpoint``. Malformed input closes the connection, after the
/// service's protocol error when it names one (``VarlinkService/protocolErrorName``).
///
/// Whatever carries the bytes (``VarlinkTransport``) tells the reader what happens: ``activate(credentials:)``,
/// ``received(_:)``, ``readComplete()``, ``writabilityChanged()`` and ``closed()``. What the connection does next
/// (its pauses, what its uid is charged, whether its input stopped) is its ``ConnectionStateMachine``'s to decide;
/// the reader keeps only the bytes not yet handled and the timer of an unfinished message. Before its peer is
/// admitted, and after a refusal, it reads nothing: the transport starts reading after ``activate(credentials:)``.
final class VarlinkReader {
    // Used on the transport's event loop only, and no access to these spans a call that could reach them again: they
    // skip the runtime exclusivity checks, which are made several times for every message. VarlinkServer's
    // `@exclusivity(unchecked)` properties (this file's and those of the module's other files) save a Get 2,458
    // instructions in a release build without `-enforce-exclusivity=unchecked` (as a package that depends on this one
    // builds it): 7,202 -> 4,744, notification 1->1 5,906 -> 5,435, pipelined Set 9,911 -> 9,113
    // (scripts/callgrind-ops.sh, Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
    private let port: VarlinkServerPort
    private let transport: any VarlinkTransport
    /// The admitted connection; nil before admission, after a refusal and once the transport closed.
    @exclusivity(unchecked) private var endpoint: VarlinkEndpoint?
    private var connection: VarlinkConnection? { endpoint?.connection }
    /// Received bytes not yet consumed as complete messages.
    @exclusivity(unchecked) private var pending: ByteBuffer?
    /// Where the frame at the start of `pending` ends.
    @exclusivity(unchecked) private var scanner: VarlinkFrameScanner
    /// Between a ``received(_:)`` and the ``readComplete()`` that ends its read burst.
    @exclusivity(unchecked) private var inReadBurst = false
    /// Fails the connection when the message at the start of `pending` stays unfinished.
    private var frameTimer: Scheduled<Void>?

    init(port: VarlinkServerPort, transport: any VarlinkTransport) {
        self.port = port
        self.transport = transport
        self.scanner = VarlinkFrameScanner(maxFrameSize: port.limits.maxMessageSize)
    }

    /// The transport is open and its peer's credentials are known (or could not be read): the connection is
    /// admitted or refused.
    func activate(credentials: Result<PeerCredentials, any Error>) {
        switch credentials {
        case .success(let credentials):
            switch port.admit(transport, credentials) {
            case .success(let endpoint):
                self.endpoint = endpoint
                // Nothing was read before admission (the transport reads after activation): nothing is pending.
                endpoint.connection.reader = self
            case .failure(let error):
                refuse(with: error)
            }
        case .failure(let error):
            port.logger.warning("cannot read the peer credentials: \(error)")
            pending = nil
            transport.close()
        }
    }

    /// Sends `error`, then closes: a refused client learns why.
    private func refuse(with error: VarlinkError) {
        pending = nil
        var bytes: [UInt8] = []
        VarlinkReply(error: error).encode(into: &bytes)
        transport.sendAndClose(ByteBufferAllocator().buffer(bytes: bytes))
    }

    /// The transport closed.
    func closed() {
        readComplete()
        frameTimer?.cancel()
        frameTimer = nil
        pending = nil
        guard let endpoint else { return }
        self.endpoint = nil
        let connection = endpoint.connection
        connection.reader = nil
        let charged = connection.state.transportClosed()
        let uid = connection.credentials.uid
        if charged.input > 0 { port.budget.release(charged.input, of: uid) }
        if charged.output > 0 { port.budget.release(charged.output, of: uid) }
        endpoint.closed()
    }

    /// Bytes arrived, valid during the call only; a read burst lasts until ``readComplete()``.
    ///
    /// The complete messages are handled where they were read; only what must wait (an unfinished message, or the
    /// calls after a pause) is copied, into `pending`.
    func received(_ bytes: UnsafeRawBufferPointer) {
        if !inReadBurst {
            inReadBurst = true
            port.tick.readBurstBegan()
        }
        // The endpoint is taken once for the whole read: each look-up retains and releases it.
        guard let endpoint, endpoint.connection.state.readsInput, !bytes.isEmpty else { return }
        let connection = endpoint.connection
        var rest = bytes
        if pending != nil {
            // Part of a message is pending: complete it with the bytes up to the first NUL, so that only those are
            // copied, and take the messages after it from where they were read.
            var probe = VarlinkFrameScanner(maxFrameSize: .max)
            guard case .complete(let nul) = probe.scan(bytes) else {
                pending!.writeBytes(bytes)
                processPending(endpoint)
                return
            }
            pending!.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[...nul]))
            processPending(endpoint)
            guard connection.state.readsInput, nul + 1 < bytes.count else { return }
            rest = UnsafeRawBufferPointer(rebasing: bytes[(nul + 1)...])
            guard pending == nil else {
                pending!.writeBytes(rest)
                processPending(endpoint)
                return
            }
            scanner.reset()
        }
        let consumed = processFrames(in: rest, endpoint)
        // Unless a call failed or closed the connection, the rest waits.
        if consumed < rest.count && connection.state.readsInput {
            let kept = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            var buffer = ByteBufferAllocator().buffer(capacity: Swift.max(kept.count * 2, 512))
            buffer.writeBytes(kept)
            pending = buffer
        }
        accountPending(connection)
    }

    /// Bytes arrived in a buffer (the in-process tests' channels).
    func received(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { received($0) }
    }

    /// The transport read all there was for now: the calls of the read burst are answered now, not in a task at the
    /// end of the tick.
    func readComplete() {
        guard inReadBurst else { return }
        inReadBurst = false
        port.tick.readBurstEnded()
    }

    /// The transport's output went above its high watermark or below its low one.
    func writabilityChanged() {
        guard let connection else { return }
        let writable = transport.isWritable
        chargeOutput(held: !writable, connection)
        transport.setReading(connection.state.reads(writable: writable))
        guard writable, let endpoint else { return }
        endpoint.becameWritable()
        resume(after: .output)
    }

    /// Stops handling this connection's calls until `reason` passes: the calls already read wait in `pending`,
    /// and no more are read.
    private func pause(for reason: ConnectionStateMachine.Pauses, _ connection: VarlinkConnection) {
        if connection.state.pause(for: reason) { transport.setReading(false) }
    }

    /// `reason` for a pause passed: the calls that waited are handled, and reading goes on unless another pause
    /// holds.
    func resume(after reason: ConnectionStateMachine.Pauses) {
        guard let endpoint, endpoint.connection.state.resume(after: reason) else { return }
        let connection = endpoint.connection
        processPending(endpoint)
        if connection.state.reads(writable: transport.isWritable) {
            transport.setReading(true)
        }
    }

    /// The transport met an error: it is logged and the transport closed.
    func transportFailed(_ error: any Error) {
        port.logger.debug("connection error: \(error)", metadata: ["connection": "\(connection?.id ?? 0)"])
        transport.close()
    }

    /// Handles the calls waiting in `pending`, as far as they go.
    private func processPending(_ endpoint: VarlinkEndpoint) {
        let connection = endpoint.connection
        if let held = pending {
            // `held` keeps the bytes while their calls are handled, whatever happens to `pending` meanwhile.
            let consumed = held.withUnsafeReadableBytes { processFrames(in: $0, endpoint) }
            if consumed > 0 && pending != nil && connection.state.readsInput {
                pending!.moveReaderIndex(forwardBy: consumed)
                if pending!.readableBytes == 0 { pending = nil }
            }
        }
        if pending != nil && connection.state.unfinishedSince != nil && pending!.readerIndex > 0 {
            // Keep the start of the unfinished message, not all the messages before it.
            pending!.discardReadBytes()
        }
        accountPending(connection)
    }

    /// Charges the bytes held in `pending` to the peer's uid, or fails the connection when its uid's budget
    /// (``VarlinkServerLimits/maxBytesPerUid``) cannot take them; arms the timeout of an unfinished message.
    private func accountPending(_ connection: VarlinkConnection) {
        if connection.state.unfinishedSince != nil && frameTimer == nil { armFrameTimer() }
        switch connection.state.inputHeld(pending?.readableBytes ?? 0) {
        case .none:
            break
        case .release(let bytes):
            port.budget.release(bytes, of: connection.credentials.uid)
        case .charge(let bytes):
            if port.budget.charge(bytes, to: connection.credentials.uid) {
                connection.state.inputCharged(bytes)
            } else {
                stopInput(
                    connection, failing: port.refusal(.uidBudget(maximum: port.limits.maxBytesPerUid)),
                    logMessage: "its uid's messages and subscriptions passed maxBytesPerUid")
            }
        }
    }

    /// Stops reading `connection`, drops what is pending and gives back its charge, and fails the connection with
    /// `error`.
    private func stopInput(_ connection: VarlinkConnection, failing error: VarlinkError, logMessage: String) {
        pending = nil
        let charged = connection.state.stopInput()
        if charged > 0 { port.budget.release(charged, of: connection.credentials.uid) }
        connection.fail(error, logMessage: logMessage)
    }

    /// A connection that is not writable holds at least ``VarlinkServerLimits/maxQueuedBytes`` of output: that much
    /// is charged to its uid while it is, and the connection that would pass the uid's budget is closed.
    private func chargeOutput(held: Bool, _ connection: VarlinkConnection) {
        let uid = connection.credentials.uid
        switch connection.state.outputHeld(held, bytes: port.limits.maxQueuedBytes) {
        case .none:
            break
        case .release(let bytes):
            port.budget.release(bytes, of: uid)
        case .charge(let bytes):
            guard port.budget.charge(bytes, to: uid) else {
                port.logLimiter.log(
                    port.logger, .warning, source: "uid \(uid)", reason: "unread output passed maxBytesPerUid",
                    "closing a connection whose unread output passed its uid's budget",
                    metadata: ["connection": "\(connection.id)", "pid": "\(connection.credentials.pid)"])
                connection.abort()
                return
            }
            connection.state.outputCharged(bytes)
        }
    }

    /// Closes the connection when the message it began is still unfinished after ``VarlinkServerLimits/frameTimeout``.
    private func armFrameTimer() {
        guard let since = connection?.state.unfinishedSince else { return }
        let timeout = port.limits.frameTimeout
        let deadline = since + TimeAmount(timeout)
        frameTimer = transport.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            frameTimer = nil
            guard let connection else { return }
            switch connection.state.frameTimerFired(armedFor: since) {
            case .none:
                break
            case .rearm:
                armFrameTimer()
            case .fail:
                stopInput(
                    connection, failing: .protocolError("message unfinished after \(timeout)"),
                    logMessage: "message unfinished after frameTimeout")
            }
        }
    }

    /// Handles the complete calls at the start of `bytes` until one is unfinished, the connection pauses or closes,
    /// or a call fails it; returns how many bytes it consumed.
    private func processFrames(in bytes: UnsafeRawBufferPointer, _ endpoint: VarlinkEndpoint) -> Int {
        let connection = endpoint.connection
        let maxMessageSize = port.limits.maxMessageSize
        scanner.maxFrameSize = maxMessageSize
        let budget = port.limits.maxQueuedBytes
        var offset = 0
        while offset < bytes.count && !connection.isClosing {
            if connection.state.awaitsDeferredReply {
                pause(for: .reply, connection)
                break
            }
            if connection.isBackedUp(budget: budget) {
                pause(for: .output, connection)
                break
            }
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let end: Int
            switch scanner.scan(rest) {
            case .complete(let length):
                end = length
                connection.state.frameCompleted()
            case .tooLong:
                stopInput(
                    connection, failing: .protocolError("message longer than the limit of \(maxMessageSize) bytes"),
                    logMessage: "message longer than maxMessageSize")
                return bytes.count
            case .incomplete:
                connection.state.frameUnfinished(at: .now())
                return offset
            }
            offset += end + 1
            let frame = UnsafeRawBufferPointer(rebasing: rest[..<end])
            if endpoint.dispatchFrame(frame, port.jsonLimits) { continue }
            do throws(VarlinkError) {
                endpoint.dispatchCall(try VarlinkCall(parsing: frame, limits: port.jsonLimits))
            } catch {
                stopInput(connection, failing: error, logMessage: "malformed message: \(error)")
                return bytes.count
            }
        }
        return offset
    }
}
