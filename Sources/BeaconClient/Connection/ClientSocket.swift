import BeaconEventLoop
import BeaconProtocol
import CEpoll
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The event loop that every connection of a process's clients runs on, started with the first connection and
/// never stopped. Idle, it sleeps in `epoll_wait` and never wakes by itself.
final class ClientLoop: @unchecked Sendable {
    let loop: EpollEventLoop
    /// What every read of every connection fills; used on the loop only, one read at a time. A connection's
    /// splitter copies what it keeps, so the bytes are never held past the read.
    let readBuffer: UnsafeMutableRawBufferPointer

    private static let started = Mutex<ClientLoop?>(nil)
    private static let readSize = 65536

    private init(loop: EpollEventLoop) {
        self.loop = loop
        readBuffer = .allocate(byteCount: Self.readSize, alignment: 16)
    }

    /// The process's loop, started now if this is the first connection.
    static func shared() throws(EpollError) -> ClientLoop {
        try started.withLock { (started) throws(EpollError) -> ClientLoop in
            if let started { return started }
            let loop = ClientLoop(loop: try EpollEventLoop.start(name: "beacon-client"))
            started = loop
            return loop
        }
    }
}

/// A connected Unix stream socket on the ``ClientLoop``: writes calls, splits the reply stream into frames and hands
/// each reply to the oldest call waiting for one.
///
/// Varlink answers the calls of a connection in order, so a FIFO of reply targets is all the bookkeeping needed.
/// Replies reach their targets on the loop straight from the read, with no pipeline, buffer allocation or task hop
/// between them. Calls and ``close()`` may come from any thread; from another thread than the loop's they are
/// queued on the loop in the order they are made.
final class ClientSocket: EpollHandler, @unchecked Sendable {
    /// Reads in a row per readiness while they fill the buffer: a burst of replies does not hold up other
    /// connections.
    private static let maxReads = 16
    /// Output capacity kept after a large call has been written.
    private static let keptOutputCapacity = 65536

    let loop: EpollEventLoop
    private let readBuffer: UnsafeMutableRawBufferPointer
    private let descriptor: Int32
    private let limits: JSONLimits
    private let closePromise: EventLoopPromise<Void>
    /// Cleared on the loop when the connection closes; read from any thread by ``isActive``.
    private let open = Atomic<Bool>(true)

    // Used on the loop only, and no access spans a call that could reach the same one again, so they skip the runtime
    // exclusivity checks: a change bound with `<~` costs the client 13,020 instructions without them and 12,767 with
    // them in a release build without `-enforce-exclusivity=unchecked`, as an application builds BeaconClient
    // (scripts/client-allocs.sh, Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
    @exclusivity(unchecked) private var splitter: VarlinkFrameSplitter
    @exclusivity(unchecked) private var waiting = CircularBuffer<ReplyTarget>()
    /// Encoded calls not yet taken by the socket, from `written` on.
    @exclusivity(unchecked) private var output: [UInt8] = []
    @exclusivity(unchecked) private var written = 0
    /// The socket took no more: writing waits until the loop reports room.
    @exclusivity(unchecked) private var awaitingRoom = false

    /// Takes `descriptor`, a connected non-blocking socket; ``start()`` registers it with the loop.
    init(descriptor: Int32, on clientLoop: ClientLoop, maxMessageSize: Int) {
        self.descriptor = descriptor
        loop = clientLoop.loop
        readBuffer = clientLoop.readBuffer
        limits = JSONLimits(maxDepth: 256, maxBytes: maxMessageSize)
        splitter = VarlinkFrameSplitter(maxFrameSize: maxMessageSize)
        closePromise = clientLoop.loop.makePromise()
    }

    /// Starts reading. When the loop cannot take the descriptor, it is closed and the error thrown.
    func start() async throws {
        try await loop.submit { [self] in
            do throws(EpollError) {
                try loop.register(descriptor, interest: .readable, handler: self)
            } catch {
                closeOnLoop()
                throw error
            }
        }.get()
    }

    /// Whether the connection is open; false from the moment it closed on the loop.
    var isActive: Bool { open.load(ordering: .relaxed) }

    /// On the loop: the connection closed, and takes nothing more.
    private var closed: Bool { !isActive }

    /// Completes once the connection has closed, after the calls waiting for replies have failed.
    var closeFuture: EventLoopFuture<Void> { closePromise.futureResult }

    /// Writes `call`, whose replies go to `target` (`nil` for a oneway call). On a closed connection the target
    /// fails with ``BeaconError/Code/connectionClosed``.
    func send(_ call: VarlinkCall, target: ReplyTarget?) {
        if loop.inEventLoop {
            write(call, target)
        } else {
            loop.execute { [self] in write(call, target) }
        }
    }

    /// Closes the connection; calls waiting for replies fail with ``BeaconError/Code/connectionClosed``.
    func close() {
        if loop.inEventLoop {
            closeOnLoop()
        } else {
            loop.execute { [self] in closeOnLoop() }
        }
    }

    func ready(_ readiness: EpollReadiness) {
        if awaitingRoom && readiness.isWritable { flush() }
        // A hang-up or an error reads as the end of the stream or as a failed read.
        if !closed && readiness.isReadable { readAvailable() }
    }

    // MARK: Writing

    private func write(_ call: VarlinkCall, _ target: ReplyTarget?) {
        guard !closed else {
            fail(target, with: .connectionClosed)
            return
        }
        call.encode(into: &output)
        if let target { waiting.append(target) }
        if !awaitingRoom { flush() }
    }

    /// Writes the output until the socket takes no more, then waits for room when something is left.
    private func flush() {
        while written < output.count {
            let sent = output.withUnsafeBytes { bytes in
                beacon_send(descriptor, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
            }
            if sent >= 0 {
                written += sent
                continue
            }
            let error = errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK {
                if !awaitingRoom { setInterest([.readable, .writable]) }
                awaitingRoom = true
                return
            }
            closeOnLoop()
            return
        }
        output.removeAll(keepingCapacity: output.capacity <= Self.keptOutputCapacity)
        written = 0
        if awaitingRoom {
            awaitingRoom = false
            setInterest(.readable)
        }
    }

    private func setInterest(_ interest: EpollInterest) {
        do throws(EpollError) {
            try loop.reregister(descriptor, interest: interest)
        } catch {
            // epoll_ctl fails here only when the kernel is out of memory.
            closeOnLoop()
        }
    }

    // MARK: Reading

    private func readAvailable() {
        for _ in 0..<Self.maxReads {
            let result = beacon_read(descriptor, readBuffer.baseAddress, readBuffer.count)
            if result > 0 {
                received(UnsafeRawBufferPointer(rebasing: readBuffer[0..<result]))
                guard !closed, result == readBuffer.count else { return }
                continue
            }
            if result < 0 {
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN || error == EWOULDBLOCK { return }
            }
            // The daemon's end of the stream, or a failed read.
            closeOnLoop()
            return
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        var unexpected = false
        do {
            // Frames are read where they were read into, unless one is unfinished.
            _ = try splitter.receive(bytes) { frame throws(VarlinkError) in
                guard !closed else { return false }
                guard try deliver(frame) else {
                    unexpected = true
                    return false
                }
                return true
            }
        } catch {
            failAll(with: .invalidReply("the peer sent an invalid message", cause: error))
            closeOnLoop()
            return
        }
        if unexpected {
            failAll(with: .invalidReply("a reply arrived while no call was waiting"))
            closeOnLoop()
        }
    }

    /// Hands one reply frame to the oldest call waiting for one; `false` when no call waits.
    private func deliver(_ frame: UnsafeRawBufferPointer) throws(VarlinkError) -> Bool {
        guard let target = waiting.first else { return false }
        switch target {
        case .single(let promise):
            let reply = try VarlinkReply(parsing: frame, limits: limits)
            waiting.removeFirst()
            if let error = reply.varlinkError {
                promise.fail(BeaconError(error))
            } else {
                promise.succeed(reply.parameters)
            }
        case .stream(let receiver):
            // A receiver that closed the connection has had the waiting calls failed already.
            if try receiver.receive(frame: frame, limits: limits), !closed { waiting.removeFirst() }
        }
        return true
    }

    // MARK: Closing

    private func closeOnLoop() {
        guard open.exchange(false, ordering: .relaxed) else { return }
        loop.deregister(descriptor)
        Glibc.close(descriptor)
        output = []
        written = 0
        failAll(with: .connectionClosed)
        closePromise.succeed()
    }

    private func failAll(with error: BeaconError) {
        while let target = waiting.popFirst() { fail(target, with: error) }
    }

    private func fail(_ target: ReplyTarget?, with error: BeaconError) {
        switch target {
        case .single(let promise): promise.fail(error)
        case .stream(let receiver): receiver.fail(error)
        case nil: break
        }
    }
}
