import Logging
import NIOCore
import Varlink

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One client connection of a ``VarlinkServer``. Used on the server's event loop only.
///
/// Output is queued and written once per event-loop tick for all connections together (``VarlinkTick``), so a burst
/// of calls or events costs one `write` and one `flush` per connection and tick.
///
/// A tick's replies are written straight to the socket with `send(2)` when the transport holds none of the
/// connection's output: no buffer is made for them and nothing is queued. What the socket does not take at once
/// goes through the transport (``VarlinkTransport``), which waits for the socket to drain, keeps the watermarks and
/// closes on an error.
public final class VarlinkConnection {
    /// Unique for the server's lifetime.
    public let id: Int
    public let credentials: PeerCredentials
    /// Microseconds since the Unix epoch.
    public let connectedUsec: Int64
    /// The service's name for a protocol violation; `nil`: a violation closes the connection without a reply.
    let protocolErrorName: String?

    // These are read or written for every call. They are used on the event loop only, and no access to them spans a
    // call that could reach them again (``sendEncoded(_:)`` hands its closure a local array, not `output`), so they
    // skip the runtime exclusivity checks. VarlinkServer's `@exclusivity(unchecked)` properties (this file's and those
    // of the module's other files) save a Get 2,458 instructions in a release build without
    // `-enforce-exclusivity=unchecked` (as a package that depends on this one builds it): 7,202 -> 4,744, notification
    // 1->1 5,906 -> 5,435, pipelined Set 9,911 -> 9,113 (scripts/callgrind-ops.sh,
    // Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
    /// The connection's state: the call being answered, the output, the input's pauses, the uid's charges.
    @exclusivity(unchecked) @usableFromInline var state = ConnectionStateMachine()
    /// The streamed call running on the connection, set by ``beginStream()``.
    public var isStreaming: Bool { state.isStreaming }
    public var isClosed: Bool { state.isClosed }
    /// Reads the connection's input: told when a pause of its input ends. Set when the connection is admitted and
    /// cleared when its transport closes, before the reader goes. Not `weak`: a weak reference gives the reader a
    /// side table, and then every retain and release of it takes the runtime's slow path (a Get: 4,026
    /// instructions with a weak reference, 3,897 with this one, scripts/callgrind-ops.sh).
    unowned var reader: VarlinkReader?

    /// What carries the connection's bytes.
    let transport: any VarlinkTransport
    /// The socket's descriptor for direct writes (``SocketDescriptor``); -1 when replies go through the transport
    /// only.
    private let descriptor: Int32
    /// Whether replies are written to the socket directly when the transport holds none of the output.
    package var writesDirectly: Bool { descriptor >= 0 }
    @usableFromInline let tick: VarlinkTick
    let logger: Logger
    /// Shared by the server's connections: log lines about clients are rate-limited per uid and reason.
    package let logLimiter: LogLimiter
    @exclusivity(unchecked) @usableFromInline var output: [UInt8] = []
    @exclusivity(unchecked) private var shared: [ByteBuffer] = []
    /// How large the output grew before it was last written, when larger than what an idle connection keeps: a
    /// connection answering a stream of pipelined calls starts each tick's output at that size instead of growing
    /// it by doubling (``clearOutput()``).
    @exclusivity(unchecked) @usableFromInline var outputHint = 0

    init(
        id: Int, credentials: PeerCredentials, transport: any VarlinkTransport, tick: VarlinkTick,
        logger: Logger, logLimiter: LogLimiter, connectedUsec: Int64, protocolErrorName: String? = nil
    ) {
        self.protocolErrorName = protocolErrorName
        self.descriptor = transport.socketDescriptor ?? -1
        self.logLimiter = logLimiter
        self.id = id
        self.credentials = credentials
        self.transport = transport
        self.tick = tick
        self.logger = logger
        self.connectedUsec = connectedUsec
    }

    /// A call is about to be handled: a call that expects a reply is counted, so that its reply can be taken back
    /// (``failCallsOfThisTick(with:)``).
    @inlinable
    func callBegins(oneway: Bool) {
        state.callBegins(oneway: oneway, outputCount: output.count)
    }

    /// Replaces the replies queued for the calls of this tick with `error`, one for each call. Replies already
    /// written to the socket are not taken back.
    package func failCallsOfThisTick(with error: VarlinkError) {
        guard let (calls, replyStart) = state.takeBackCallsOfThisTick() else { return }
        output.removeSubrange(min(replyStart, output.count)...)
        var reply: [UInt8] = []
        VarlinkReply(error: error).encode(into: &reply)
        sendEncoded { output in
            for _ in 0..<calls { output.append(contentsOf: reply) }
        }
    }

    /// Whether the peer takes its output fast enough (queued bytes below the high watermark).
    public var isWritable: Bool { transport.isWritable }

    /// Bytes written to the socket layer and not yet taken by the peer, plus output queued for this tick.
    public var queuedBytes: Int {
        let buffered = transport.heldBytes ?? 0
        return buffered + output.count + shared.reduce(0) { $0 + $1.readableBytes }
    }

    /// Answers the call in `frame` read in place, through `answer`, when `answer` returns true; returns false, having
    /// done nothing, when it does not answer the call, or when the call may not be answered now (a call during a
    /// stream), and the frame is parsed and handed to ``VarlinkService/handle(_:on:client:)``. Only calls of the
    /// service's own methods, recognized with ``VarlinkCallView/methodIs(_:)``, may be answered: the method name is
    /// not checked otherwise. Inlined into the service's ``VarlinkService/frameHandler(on:client:)``.
    @inlinable
    package func answerInPlace(
        _ frame: UnsafeRawBufferPointer, limits: JSONLimits, _ answer: (VarlinkCallView) -> Bool
    ) -> Bool {
        guard let call = VarlinkCallView(parsing: frame, limits: limits) else { return false }
        guard state.admitsCall(oneway: call.oneway) else { return false }
        callBegins(oneway: call.oneway)
        guard answer(call) else {
            state.callNotHandled(oneway: call.oneway)
            return false
        }
        state.callHandled()
        return true
    }

    /// Whether the output not yet taken by the peer reached `budget` bytes: then the connection's calls wait
    /// until it drains. Checks the socket's watermark and this tick's output, not the exact byte count.
    func isBackedUp(budget: Int) -> Bool {
        !transport.isWritable || output.count >= budget
    }

    /// The current call is answered later (``deferReply()``): until ``answerDeferred(_:)``, no further call of the
    /// connection is handled, so that replies keep the order of the calls.
    public var awaitsDeferredReply: Bool { state.awaitsDeferredReply }

    /// Answers the current call later, with ``answerDeferred(_:)``; returns whether a reply is awaited, which a
    /// oneway call does not expect. The call no longer counts among this tick's replies
    /// (``failCallsOfThisTick(with:)``).
    @discardableResult
    public func deferReply() -> Bool {
        state.deferReply()
    }

    /// Answers the call deferred with ``deferReply()``: `reply` sends its reply with the usual functions
    /// (``reply(_:integer:)``, ``reply(error:)``, ...), then the connection's further calls are handled.
    public func answerDeferred(_ reply: (VarlinkConnection) -> Void) {
        guard state.deferredReplyBegins(outputCount: output.count) else { return }
        reply(self)
        if state.deferredReplySent() { reader?.resume(after: .reply) }
    }

    /// Sends a reply with `parameters`. A reply with `continues` begins a stream (``beginStream()``), or continues
    /// it; one without ends it.
    public func reply(_ parameters: [String: JSONValue], continues: Bool = false) {
        guard state.replies(continuing: continues) else { return }
        sendEncoded { VarlinkReply(parameters: parameters, continues: continues).encode(into: &$0) }
    }

    /// Sends an error reply, which also ends a stream.
    public func reply(error: VarlinkError) {
        guard state.replies(continuing: false) else { return }
        sendEncoded { VarlinkReply(error: error).encode(into: &$0) }
    }

    /// Marks the current call as streamed, as a reply with `continues` does: until the stream ends (a reply without
    /// `continues`, or ``endStream()``) further calls on the connection are refused, except oneway ones. For a
    /// stream whose first reply went out with ``sendEncoded(_:)``.
    public func beginStream() {
        state.streamBegins()
    }

    /// Marks the stream as finished after its last reply was sent with ``sendEncoded(_:)``.
    public func endStream() {
        state.streamEnds()
    }

    /// Appends one or more complete, already encoded messages (each JSON text followed by a NUL byte).
    ///
    /// While a oneway call is being handled, nothing is sent: the caller asked for no reply.
    @inlinable
    package func sendEncoded(_ body: (inout [UInt8]) -> Void) {
        guard !state.isClosed, !state.discardsReplies else { return }
        var buffer: [UInt8] = []
        swap(&buffer, &output)
        if buffer.capacity < outputHint { buffer.reserveCapacity(outputHint) }
        body(&buffer)
        swap(&buffer, &output)
        tick.outputQueued(on: self)
    }

    /// Queues the reply `{"parameters":{"NAME":VALUE}}` for a method whose only output is one integer. `name` is
    /// written as is: a plain ASCII parameter name.
    @inlinable
    package func reply(_ name: StaticString, integer value: Int64) {
        sendEncoded { buffer in
            let count = name.utf8CodeUnitCount + JSONWriter.decimalLength(value) + 21
            JSONWriter.append(count: count, to: &buffer) { out in
                out.write("{\"parameters\":{\"")
                out.write(name)
                out.write("\":")
                out.write(int: value)
                out.write("}}")
                out.write(byte: 0)
            }
        }
    }

    /// Queues a buffer shared with other connections (a fan-out message encoded once).
    package func send(shared buffer: ByteBuffer) {
        guard !isClosed else { return }
        if !output.isEmpty {
            // Keep the order: what was queued before goes first. It can no longer be taken back.
            state.outputWritten()
            shared.append(outputBuffer())
            clearOutput()
        }
        shared.append(buffer)
        tick.outputQueued(on: self)
    }

    /// Closes the connection after the output queued so far has been written.
    public func close() {
        guard state.closeRequested() else { return }
        tick.outputQueued(on: self)
    }

    /// Closes the connection at once, dropping the output queued for it.
    public func abort() {
        guard !isClosed else { return }
        markClosed()
        transport.close()
    }

    /// Whether the connection's calls are handled: not once it failed or is closing.
    var isClosing: Bool { state.isClosing }

    /// Sends `error` (a protocol violation), logs it and closes the connection.
    func fail(_ error: VarlinkError, logMessage: String) {
        // The first violation closes the connection; what was pipelined after it is neither answered nor logged.
        guard state.violation() else { return }
        logLimiter.log(
            logger, .notice, source: "uid \(credentials.uid)", reason: logMessage,
            "closing connection: \(logMessage)",
            metadata: ["connection": "\(id)", "pid": "\(credentials.pid)", "uid": "\(credentials.uid)"]
        )
        var error = error
        if error.isProtocolError {
            // The service names protocol violations, or they get no reply.
            guard let name = protocolErrorName else {
                close()
                return
            }
            error = VarlinkError(name: name, parameters: error.parameters)
        }
        sendEncoded { VarlinkReply(error: error).encode(into: &$0) }
        close()
    }

    private func writeOutput(flushing: Bool = false) {
        // What is written can no longer be taken back.
        state.outputWritten()
        guard !output.isEmpty else { return }
        let buffer = outputBuffer()
        state.transportMayHoldOutput = true
        transport.write(buffer, flush: flushing)
        clearOutput()
    }

    /// The output in a buffer of its own, exactly as large: a write the peer does not take at once keeps it.
    private func outputBuffer() -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: output.count)
        buffer.writeBytes(output)
        return buffer
    }

    private func clearOutput() {
        // Idle connections keep no large buffers: many thousands of subscribers may be connected.
        if output.capacity > 1024 {
            outputHint = output.count > 1024 ? output.count : 0
            output = []
        } else {
            output.removeAll(keepingCapacity: true)
        }
    }

    /// At most this many buffers go to the socket in one direct write; a flush with more goes through SwiftNIO.
    private static let maxDirectBuffers = 16

    /// Writes the output and the shared buffers to the socket directly, in one `sendmsg`; returns whether all of
    /// it was taken. What the socket did not take stays queued, in order, for the transport's write path, which also
    /// meets any error of the socket again and closes the transport.
    private func writeDirectly() -> Bool {
        guard shared.count < Self.maxDirectBuffers else { return false }
        if state.transportMayHoldOutput {
            guard transport.heldBytes == 0 else { return false }
            state.transportMayHoldOutput = false
        }
        // While the transport is active, the number is still this connection's socket.
        guard transport.isActive else { return false }
        // What is written can no longer be taken back.
        state.outputWritten()
        var sent = sendQueued()
        guard sent >= 0 else { return false }
        guard sent >= output.count else {
            output.removeFirst(sent)
            return false
        }
        sent -= output.count
        clearOutput()
        if shared.isEmpty { return true }
        var written = 0
        while written < shared.count, sent >= shared[written].readableBytes {
            sent -= shared[written].readableBytes
            written += 1
        }
        shared.removeFirst(written)
        guard shared.isEmpty else {
            shared[0].moveReaderIndex(forwardBy: sent)
            return false
        }
        return true
    }

    /// Sends ``output`` and then ``shared`` with one `sendmsg`; returns the bytes the socket took, or -1.
    private func sendQueued() -> Int {
        output.withUnsafeBytes { head in
            // Replies only, the common case: no vectors to set up.
            if shared.isEmpty { return SocketDescriptor.send(head, to: descriptor) }
            return withUnsafeTemporaryAllocation(of: iovec.self, capacity: shared.count + 1) { vectors in
                vectors[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress), iov_len: head.count)
                return withSharedBytes(from: 0, in: vectors) { count in
                    SocketDescriptor.send(UnsafeMutableBufferPointer(rebasing: vectors[0..<count]), to: descriptor)
                }
            }
        }
    }

    /// Fills `vectors` after `index` with the shared buffers from `index` on, and calls `body` with the count of
    /// vectors while all of their bytes stay valid.
    private func withSharedBytes(
        from index: Int, in vectors: UnsafeMutableBufferPointer<iovec>, _ body: (Int) -> Int
    ) -> Int {
        guard index < shared.count else { return body(index + 1) }
        return shared[index].withUnsafeReadableBytes { bytes in
            vectors[index + 1] = iovec(
                iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
            return withSharedBytes(from: index + 1, in: vectors, body)
        }
    }

    /// Writes and flushes everything queued.
    func flush() {
        state.isQueuedForFlush = false
        guard !isClosed else { return }
        let closing = state.isClosing
        if descriptor >= 0 && !closing && (!output.isEmpty || !shared.isEmpty) && writeDirectly() {
            flushed()
            return
        }
        if shared.isEmpty && !closing && !output.isEmpty {
            // Only replies: one write that flushes.
            writeOutput(flushing: true)
            flushed()
            return
        }
        writeOutput()
        for buffer in shared {
            state.transportMayHoldOutput = true
            transport.write(buffer, flush: false)
        }
        shared.removeAll()
        transport.flush()
        if closing {
            markClosed()
            transport.close()
        }
        flushed()
    }

    /// The input paused for output resumes, in a task of its own, once the peer takes its output again.
    @inline(__always)
    private func flushed() {
        guard state.flushed(writable: transport.isWritable), let reader else { return }
        transport.eventLoop.assumeIsolated().execute { [weak reader] in reader?.resume(after: .output) }
    }

    func markClosed() {
        state.closed()
        output = []
        shared = []
    }
}

/// A generated service's replies go to the connection its call came on.
extension VarlinkConnection: VarlinkResponder {}
