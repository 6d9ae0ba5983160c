import Varlink

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A blocking varlink connection over a Unix stream socket, made of plain POSIX calls.
///
/// Made for short-lived processes such as command-line tools: connecting costs one `socket` and one `connect`,
/// nothing is started in the background, and every wait is bounded by a ``BlockingDeadline`` through `poll(2)`.
/// ``VarlinkSocketClient`` calls through it from async code.
///
/// ```swift
/// let connection = try BlockingVarlinkConnection(socketPath: "/run/systemd/userdb/io.systemd.Multiplexer")
/// let reply = try connection.call(
///     VarlinkCall(method: "io.systemd.UserDatabase.GetUserRecord", parameters: ["uid": 0, "service": "io.systemd.Multiplexer"]),
///     timeout: .seconds(5))
/// print(reply["record"] ?? nil)
/// ```
///
/// Streamed calls (`"more": true`) are sent with ``send(_:deadline:)`` and read reply by reply with
/// ``receive(deadline:)`` until a reply without `continues`. To wait on several connections at once use
/// ``waitForReply(on:deadline:)``.
///
/// A connection is not thread-safe: use it from one thread at a time. It closes its socket when released.
public final class BlockingVarlinkConnection {
    /// The limits applied to replies unless others are given: 64 MiB per message, nesting 256 deep.
    public static let defaultLimits = JSONLimits(maxDepth: 256, maxBytes: 64 << 20)

    /// The path of the socket connected to.
    public let socketPath: String
    /// The limits every reply is parsed with; a reply larger than `maxBytes` is ``BlockingVarlinkError/Code/invalidReply``.
    public let limits: JSONLimits
    /// The socket, or `-1` once closed.
    public private(set) var fileDescriptor: Int32

    private var splitter: VarlinkFrameSplitter
    private var pending: [VarlinkReply] = []
    private var pendingIndex = 0
    private var peerClosed = false
    private var writeBuffer: [UInt8] = []

    /// Connects to the Unix socket at `socketPath`.
    ///
    /// `timeout` bounds the `connect` call (it only waits when the daemon's listen queue is full); `nil` waits
    /// for ever. Throws ``BlockingVarlinkError/Code/cannotConnect`` when no socket exists at the path or nobody
    /// listens on it, ``BlockingVarlinkError/Code/invalidAddress`` when the path is too long for a socket address.
    public init(socketPath: String, timeout: Duration? = nil, limits: JSONLimits = defaultLimits)
        throws(BlockingVarlinkError)
    {
        self.socketPath = socketPath
        self.limits = limits
        self.splitter = VarlinkFrameSplitter(maxFrameSize: limits.maxBytes)
        fileDescriptor = try UnixStreamSocket.connect(to: socketPath, timeout: timeout)
    }

    deinit {
        if fileDescriptor >= 0 { systemClose(fileDescriptor) }
    }

    /// Closes the socket. Later calls fail with ``BlockingVarlinkError/Code/connectionClosed``.
    public func close() {
        if fileDescriptor >= 0 { systemClose(fileDescriptor) }
        fileDescriptor = -1
    }

    /// Sends one call and returns the parameters of its single reply.
    ///
    /// `timeout` bounds the whole exchange; `nil` waits for ever. An error reply throws
    /// ``BlockingVarlinkError/Code/remote`` with the peer's error. Use ``send(_:deadline:)`` and
    /// ``receive(deadline:)`` for `more` and `oneway` calls.
    public func call(_ call: VarlinkCall, timeout: Duration? = nil) throws(BlockingVarlinkError)
        -> [String: JSONValue]
    {
        let deadline = BlockingDeadline(timeout: timeout)
        try send(call, deadline: deadline)
        let reply = try receive(deadline: deadline)
        if let error = reply.varlinkError { throw BlockingVarlinkError(remote: error) }
        return reply.parameters
    }

    /// Sends `call` without waiting for a reply.
    public func send(_ call: VarlinkCall, deadline: BlockingDeadline = .never) throws(BlockingVarlinkError) {
        writeBuffer.removeAll(keepingCapacity: true)
        call.encode(into: &writeBuffer)
        var written = 0
        while written < writeBuffer.count {
            guard fileDescriptor >= 0 else { throw BlockingVarlinkConnection.closedError }
            let result = writeBuffer.withUnsafeBytes { raw in
                systemSend(fileDescriptor, raw.baseAddress! + written, raw.count - written)
            }
            if result >= 0 {
                written += result
                continue
            }
            let number = errno
            switch number {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                guard try poll(for: Int16(POLLOUT), deadline: deadline) else {
                    throw BlockingVarlinkError(code: .timedOut, message: "timed out sending \(call.method)")
                }
            case EPIPE, ECONNRESET:
                throw BlockingVarlinkConnection.closedError
            default:
                throw BlockingVarlinkError(
                    code: .systemCallFailed, message: "cannot send \(call.method)", systemError: number)
            }
        }
    }

    /// Returns the next reply, waiting for it until `deadline`.
    ///
    /// Error replies are returned, not thrown (``VarlinkReply/varlinkError``). Throws
    /// ``BlockingVarlinkError/Code/timedOut`` when the deadline passes first,
    /// ``BlockingVarlinkError/Code/connectionClosed`` when the peer closes the connection.
    public func receive(deadline: BlockingDeadline = .never) throws(BlockingVarlinkError) -> VarlinkReply {
        while true {
            if let reply = takePending() { return reply }
            if peerClosed || fileDescriptor < 0 { throw BlockingVarlinkConnection.closedError }
            guard try poll(for: Int16(POLLIN), deadline: deadline) else {
                throw BlockingVarlinkError(code: .timedOut, message: "timed out waiting for a reply")
            }
            try fill()
        }
    }

    /// Whether a complete reply has been read and waits to be taken by ``receive(deadline:)``, or the peer has
    /// closed the connection (``receive(deadline:)`` then throws at once).
    public var isReadyToReceive: Bool {
        pendingIndex < pending.count || peerClosed || fileDescriptor < 0
    }

    /// Waits until one of `connections` is ready to receive (see ``isReadyToReceive``) and returns its index,
    /// or `nil` when `deadline` passes first.
    public static func waitForReply(on connections: [BlockingVarlinkConnection], deadline: BlockingDeadline)
        throws(BlockingVarlinkError) -> Int?
    {
        while true {
            if let ready = connections.firstIndex(where: { $0.isReadyToReceive }) { return ready }
            var descriptors = connections.map { pollfd(fd: $0.fileDescriptor, events: Int16(POLLIN), revents: 0) }
            let count = try pollRetrying(&descriptors, deadline: deadline)
            if count == 0 { return nil }
            for (index, descriptor) in descriptors.enumerated() where descriptor.revents != 0 {
                try connections[index].fill()
            }
        }
    }

    // MARK: - Reading

    private func takePending() -> VarlinkReply? {
        guard pendingIndex < pending.count else { return nil }
        let reply = pending[pendingIndex]
        pendingIndex += 1
        if pendingIndex == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingIndex = 0
        }
        return reply
    }

    /// Reads what the socket holds (one `read`), and parses every complete reply into `pending`.
    private func fill() throws(BlockingVarlinkError) {
        guard fileDescriptor >= 0, !peerClosed else { return }
        let chunk = 65_536
        let result: Int = withUnsafeTemporaryAllocation(byteCount: chunk, alignment: 16) { buffer in
            var count: Int
            repeat {
                count = read(fileDescriptor, buffer.baseAddress!, chunk)
            } while count < 0 && errno == EINTR
            if count > 0 { splitter.append(UnsafeRawBufferPointer(rebasing: buffer[..<count])) }
            return count
        }
        if result == 0 {
            peerClosed = true
        } else if result < 0 {
            let number = errno
            if number == EAGAIN || number == EWOULDBLOCK { return }
            if number == ECONNRESET {
                peerClosed = true
                return
            }
            throw BlockingVarlinkError(code: .systemCallFailed, message: "cannot read a reply", systemError: number)
        }
        let limits = self.limits
        do {
            while let reply = try splitter.withNextFrame({ (frame) throws(VarlinkError) in
                try VarlinkReply(parsing: frame, limits: limits)
            }) {
                pending.append(reply)
            }
        } catch {
            close()
            throw BlockingVarlinkError(code: .invalidReply, message: "invalid reply: \(error)", remoteError: error)
        }
    }

    /// Waits until the socket is ready for `events`; `false` when the deadline passed first.
    private func poll(for events: Int16, deadline: BlockingDeadline) throws(BlockingVarlinkError) -> Bool {
        guard fileDescriptor >= 0 else { throw BlockingVarlinkConnection.closedError }
        var descriptors = [pollfd(fd: fileDescriptor, events: events, revents: 0)]
        return try BlockingVarlinkConnection.pollRetrying(&descriptors, deadline: deadline) > 0
    }

    private static func pollRetrying(_ descriptors: inout [pollfd], deadline: BlockingDeadline)
        throws(BlockingVarlinkError) -> Int
    {
        while true {
            let timeout = deadline.pollTimeout
            let count = descriptors.withUnsafeMutableBufferPointer { buffer in
                systemPoll(buffer.baseAddress!, nfds_t(buffer.count), timeout)
            }
            if count >= 0 {
                if count == 0 && timeout != 0 && !deadline.hasPassed { continue }
                return Int(count)
            }
            let number = errno
            if number == EINTR { continue }
            throw BlockingVarlinkError(code: .systemCallFailed, message: "poll failed", systemError: number)
        }
    }

    private static let closedError = BlockingVarlinkError(
        code: .connectionClosed, message: "the daemon closed the connection")
}

// The C library functions, under names that the members `close()` and `send(_:deadline:)` do not hide.
private func systemClose(_ descriptor: Int32) {
    _ = close(descriptor)
}

private func systemPoll(_ descriptors: UnsafeMutablePointer<pollfd>, _ count: nfds_t, _ timeout: Int32) -> Int32 {
    poll(descriptors, count, timeout)
}

private func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
        return send(descriptor, bytes, count, 0)
    #else
        return send(descriptor, bytes, count, Int32(MSG_NOSIGNAL))
    #endif
}
