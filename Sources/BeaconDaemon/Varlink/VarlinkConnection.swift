import BeaconProtocol
import NIOCore

/// One client connection of a ``VarlinkServer``. Used on the server's event loop only.
///
/// Output is queued and written once per event-loop tick for all connections together, so a burst of calls or
/// events costs one `write` and one `flush` per connection and tick.
public final class VarlinkConnection {
    /// Unique for the server's lifetime.
    public let id: Int
    public let credentials: PeerCredentials
    /// Microseconds since the Unix epoch.
    public let connectedUsec: Int64
    /// Per-connection state of the service.
    public var serviceState: AnyObject?

    // These are read or written for every call. They are used on the event loop only, and no access to them spans a
    // call that could reach them again (``sendEncoded(_:)`` hands its closure a local array, not `output`), so they
    // skip the runtime exclusivity checks.
    /// The streamed call running on the connection, set by ``beginStream()``.
    @exclusivity(unchecked) public private(set) var isStreaming = false
    @exclusivity(unchecked) public private(set) var isClosed = false

    let channel: any Channel
    /// The context of the connection's ``VarlinkChannelHandler``: output written there goes straight to the socket
    /// channel's head, without entering the pipeline from its tail.
    private let context: ChannelHandlerContext
    unowned let core: VarlinkServerCore
    @exclusivity(unchecked) private var output: [UInt8] = []
    @exclusivity(unchecked) private var shared: [ByteBuffer] = []
    @exclusivity(unchecked) var isQueuedForFlush = false
    @exclusivity(unchecked) private var closeAfterFlush = false
    /// Replies of a oneway call are dropped.
    @exclusivity(unchecked) var discardsReplies = false

    init(
        id: Int, credentials: PeerCredentials, context: ChannelHandlerContext, core: VarlinkServerCore,
        connectedUsec: Int64
    ) {
        self.id = id
        self.credentials = credentials
        self.channel = context.channel
        self.context = context
        self.core = core
        self.connectedUsec = connectedUsec
    }

    /// Whether the peer takes its output fast enough (queued bytes below the high watermark).
    public var isWritable: Bool { channel.isWritable }

    /// Bytes written to the socket layer and not yet taken by the peer, plus output queued for this tick.
    public var queuedBytes: Int {
        let buffered = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        return buffered + output.count + shared.reduce(0) { $0 + $1.readableBytes }
    }

    /// Sends a reply with `parameters`. A reply without `continues` ends a stream begun with ``beginStream()``.
    public func reply(_ parameters: [String: JSONValue], continues: Bool = false) {
        guard !discardsReplies else { return }
        sendEncoded { VarlinkReply(parameters: parameters, continues: continues).encode(into: &$0) }
        if !continues { isStreaming = false }
    }

    /// Sends an error reply, which also ends a stream.
    public func reply(error: VarlinkError) {
        guard !discardsReplies else { return }
        sendEncoded { VarlinkReply(error: error).encode(into: &$0) }
        isStreaming = false
    }

    /// Marks the current call as streamed: its first reply has been sent with `continues: true`, and until the
    /// stream ends (a reply without `continues`, or ``endStream()``) further calls on the connection are refused,
    /// except oneway ones.
    public func beginStream() {
        guard !discardsReplies else { return }
        isStreaming = true
    }

    /// Marks the stream as finished after its last reply was sent with ``sendEncoded(_:)``.
    public func endStream() {
        isStreaming = false
    }

    /// Appends one or more complete, already encoded messages (each JSON text followed by a NUL byte).
    ///
    /// While a oneway call is being handled, nothing is sent: the caller asked for no reply.
    public func sendEncoded(_ body: (inout [UInt8]) -> Void) {
        guard !isClosed, !discardsReplies else { return }
        var buffer: [UInt8] = []
        swap(&buffer, &output)
        body(&buffer)
        swap(&buffer, &output)
        core.queueForFlush(self)
    }

    /// Queues the reply `{"parameters":{"NAME":VALUE}}` for a method whose only output is one integer. `name` is
    /// written as is: a plain ASCII parameter name.
    public func reply(_ name: StaticString, integer value: Int64) {
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
    public func send(shared buffer: ByteBuffer) {
        guard !isClosed else { return }
        if !output.isEmpty {
            // Keep the order: what was queued before goes first.
            writeOutput()
        }
        shared.append(buffer)
        core.queueForFlush(self)
    }

    /// Closes the connection after the output queued so far has been written.
    public func close() {
        guard !isClosed else { return }
        closeAfterFlush = true
        core.queueForFlush(self)
    }

    /// Closes the connection at once, dropping the output queued for it.
    public func abort() {
        guard !isClosed else { return }
        markClosed()
        channel.close(promise: nil)
    }

    /// Sends `error` (a protocol violation), logs it and closes the connection.
    func fail(_ error: VarlinkError, logMessage: String) {
        core.logger.notice(
            "closing connection: \(logMessage)",
            metadata: ["connection": "\(id)", "pid": "\(credentials.pid)", "uid": "\(credentials.uid)"]
        )
        discardsReplies = false
        sendEncoded { VarlinkReply(error: error).encode(into: &$0) }
        close()
    }

    private func writeOutput(flushing: Bool = false) {
        guard !output.isEmpty else { return }
        // A buffer of its own, exactly as large as the output: a write the peer does not take at once keeps it.
        var buffer = ByteBufferAllocator().buffer(capacity: output.count)
        buffer.writeBytes(output)
        if flushing {
            context.writeAndFlush(NIOAny(buffer), promise: nil)
        } else {
            context.write(NIOAny(buffer), promise: nil)
        }
        // Idle connections keep no large buffers: many thousands of subscribers may be connected.
        if output.capacity > 1024 {
            output = []
        } else {
            output.removeAll(keepingCapacity: true)
        }
    }

    /// Writes and flushes everything queued.
    func flush() {
        isQueuedForFlush = false
        guard !isClosed else { return }
        if shared.isEmpty && !closeAfterFlush && !output.isEmpty {
            // Only replies: one write that flushes.
            writeOutput(flushing: true)
            return
        }
        writeOutput()
        for buffer in shared {
            context.write(NIOAny(buffer), promise: nil)
        }
        shared.removeAll()
        context.flush()
        if closeAfterFlush {
            markClosed()
            channel.close(promise: nil)
        }
    }

    func markClosed() {
        isClosed = true
        output = []
        shared = []
    }
}
