import BeaconEventLoop
import CEpoll
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A connected Unix stream socket on the server's own ``EpollEventLoop``, read into a ``VarlinkReader``.
///
/// It reads what the socket holds when the loop says it is readable, up to 16 reads in a row while they fill the
/// buffer, then ends the read burst. Output goes to the socket directly from ``VarlinkConnection``; what the socket
/// does not take waits here, in order, until the loop says there is room again. It follows SwiftNIO's channels where
/// the connection relies on them: ``isWritable`` follows the watermarks, and closing tells the reader at once and
/// completes ``closeFuture`` in the loop's next round.
final class SocketTransport: VarlinkTransport, EpollHandler {
    /// Reads in a row per readiness while they fill the buffer.
    private static let maxReads = 16
    /// The read size starts here and doubles while reads fill it, up to `maximumRead`, and halves after two reads
    /// that fill less than half. The buffer of the last read stays with the connection for the next one, so the
    /// start size is what every idle connection keeps.
    private static let initialRead = 256
    private static let minimumRead = 64
    private static let maximumRead = 65536

    let descriptor: Int32
    private let loop: EpollEventLoop
    /// Told what happens; dropped once the transport is closed (it holds the transport too).
    var reader: VarlinkReader?
    private let closePromise: EventLoopPromise<Void>

    // Used on the loop only; no access spans a call that could reach them again. VarlinkServer's
    // `@exclusivity(unchecked)` properties (this file's and those of the module's other files) save a Get 2,458
    // instructions in a release build without `-enforce-exclusivity=unchecked` (as a package that depends on this one
    // builds it): 7,202 -> 4,744, notification 1->1 5,906 -> 5,435, pipelined Set 9,911 -> 9,113
    // (scripts/callgrind-ops.sh, Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
    /// What each read fills, `readSize` bytes or more. The reader sees it only during ``VarlinkReader/received(_:)``
    /// and copies what it keeps, so it is never shared. Freed with the transport, not when it closes: a close
    /// during a read leaves the read's bytes in use.
    @exclusivity(unchecked) private var readBuffer: UnsafeMutableRawBufferPointer
    @exclusivity(unchecked) private var readSize = SocketTransport.initialRead
    @exclusivity(unchecked) private var shortReads = 0
    @exclusivity(unchecked) private var held: [ByteBuffer] = []
    @exclusivity(unchecked) private var heldCount = 0
    @exclusivity(unchecked) private var waterMark = ChannelOptions.Types.WriteBufferWaterMark(
        low: 32 * 1024, high: 64 * 1024)
    @exclusivity(unchecked) private(set) var isWritable = true
    @exclusivity(unchecked) private(set) var isActive = true
    @exclusivity(unchecked) private var reading = true
    /// The interest the loop has for the descriptor.
    @exclusivity(unchecked) private var interest: EpollInterest = .readable

    /// Takes `descriptor`, a connected non-blocking socket; ``open()`` registers it with `loop`.
    init(descriptor: Int32, loop: EpollEventLoop) {
        self.descriptor = descriptor
        self.loop = loop
        closePromise = loop.makePromise()
        readBuffer = .allocate(byteCount: Self.initialRead, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
    }

    /// Starts reading; false (the descriptor closed) when the loop cannot take it.
    func open() -> Bool {
        do {
            try loop.register(descriptor, interest: interest, handler: self)
            return true
        } catch {
            isActive = false
            Glibc.close(descriptor)
            closePromise.succeed()
            return false
        }
    }

    var eventLoop: any EventLoop { loop }
    var heldBytes: Int? { isActive ? heldCount : nil }
    var closeFuture: EventLoopFuture<Void> { closePromise.futureResult }

    // MARK: Reading

    func ready(_ readiness: EpollReadiness) {
        if readiness.isWritable { writeHeld() }
        if reading && isActive && readiness.isReadable { readAvailable() }
        // Reported whatever the interest: a transport that is not reading closes, or it hears of it again and again.
        if isActive && (readiness.isHungUp || readiness.hasError) && !reading { close() }
    }

    private func readAvailable() {
        // Held for the burst, not for each read: closing drops the transport's reference.
        guard let reader else { return }
        for _ in 0..<Self.maxReads {
            let size = readSize
            if readBuffer.count < size {
                readBuffer.deallocate()
                readBuffer = .allocate(byteCount: size, alignment: 16)
            }
            let result = beacon_read(descriptor, readBuffer.baseAddress, size)
            if result > 0 {
                let filled = result >= size
                adaptReadSize(filled: filled, count: result)
                reader.received(UnsafeRawBufferPointer(rebasing: readBuffer[0..<result]))
                guard filled, isActive, reading else { break }
                continue
            }
            if result == 0 {
                // The peer's end of the stream.
                reader.readComplete()
                close()
                return
            }
            let error = errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK { break }
            reader.readComplete()
            reader.transportFailed(IOError(errnoCode: error, reason: "read"))
            close()
            return
        }
        // A buffer that grew for a large message does not stay with an idle connection once reads are small again.
        if readBuffer.count > 2 * readSize {
            readBuffer.deallocate()
            readBuffer = .allocate(byteCount: readSize, alignment: 16)
        }
        reader.readComplete()
    }

    private func adaptReadSize(filled: Bool, count: Int) {
        if filled {
            shortReads = 0
            readSize = min(readSize * 2, Self.maximumRead)
        } else if count <= readSize / 2 {
            shortReads += 1
            if shortReads >= 2 {
                shortReads = 0
                readSize = max(readSize / 2, Self.minimumRead)
            }
        } else {
            shortReads = 0
        }
    }

    func setReading(_ reading: Bool) {
        guard isActive, reading != self.reading else { return }
        self.reading = reading
        updateInterest()
    }

    // MARK: Writing

    func write(_ buffer: ByteBuffer, flush: Bool) {
        guard isActive else { return }
        held.append(buffer)
        heldCount += buffer.readableBytes
        if isWritable && heldCount > waterMark.high {
            isWritable = false
            reader?.writabilityChanged()
        }
        if flush { self.flush() }
    }

    func flush() {
        // While the socket is full, the loop says when there is room.
        guard isActive, !held.isEmpty, !awaitingRoom else { return }
        writeHeld()
    }

    func sendAndClose(_ buffer: ByteBuffer) {
        write(buffer, flush: true)
        if heldCount == 0 {
            close()
        } else {
            closeWhenWritten = true
        }
    }

    @exclusivity(unchecked) private var closeWhenWritten = false
    /// The socket took no more: writing waits until the loop reports room.
    @exclusivity(unchecked) private var awaitingRoom = false

    /// Writes what is held until the socket takes no more, then waits for room when something is left.
    private func writeHeld() {
        awaitingRoom = false
        while isActive, !held.isEmpty {
            let sent = held[0].withUnsafeReadableBytes { SocketDescriptor.send($0, to: descriptor) }
            if sent < 0 {
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN || error == EWOULDBLOCK {
                    awaitingRoom = true
                    break
                }
                reader?.transportFailed(IOError(errnoCode: error, reason: "send"))
                close()
                return
            }
            heldCount -= sent
            if sent == held[0].readableBytes {
                held.removeFirst()
            } else {
                held[0].moveReaderIndex(forwardBy: sent)
            }
        }
        guard isActive else { return }
        if held.isEmpty && closeWhenWritten {
            close()
            return
        }
        updateInterest()
        if !isWritable && heldCount < waterMark.low {
            isWritable = true
            reader?.writabilityChanged()
        }
    }

    func setWaterMark(_ mark: ChannelOptions.Types.WriteBufferWaterMark) {
        waterMark = mark
        // New marks (a reload) apply to what is held now, not from the next write on. The reader hears of it in the
        // loop's next round: a reload sets the server's limits before the service's, and a connection that resumed
        // here would handle its waiting calls in between.
        guard isActive else { return }
        let writable = isWritable ? heldCount <= mark.high : heldCount < mark.low
        guard writable != isWritable else { return }
        isWritable = writable
        loop.assumeIsolated().execute { [self] in reader?.writabilityChanged() }
    }

    private func updateInterest() {
        var wanted: EpollInterest = reading ? .readable : []
        if !held.isEmpty { wanted.insert(.writable) }
        guard wanted != interest, isActive else { return }
        interest = wanted
        do {
            try loop.reregister(descriptor, interest: wanted)
        } catch {
            reader?.transportFailed(error)
            close()
        }
    }

    var socketDescriptor: Int32? { descriptor }

    // MARK: Closing

    func close() {
        guard isActive else { return }
        isActive = false
        loop.deregister(descriptor)
        Glibc.close(descriptor)
        held.removeAll()
        heldCount = 0
        let reader = self.reader
        self.reader = nil
        reader?.closed()
        // As SwiftNIO does: the reader first, the future in the next round.
        let promise = closePromise
        loop.execute { promise.succeed() }
    }
}

/// A listening Unix socket on the server's ``EpollEventLoop``: accepts every connection waiting and hands it over.
///
/// When `accept` fails, most often because the process or the system ran out of descriptors, it stops accepting
/// for ``pause`` instead of retrying at once, logs that once per interval, and goes on by itself; the connections
/// waiting meanwhile stay in the listen queue.
final class SocketListener: EpollHandler {
    /// How long accepting pauses after a failure.
    static let pause = TimeAmount.milliseconds(250)
    /// At most one log line per this interval, with the number of failures since the last.
    static let logInterval: UInt64 = 10_000_000_000

    let descriptor: Int32
    private let loop: EpollEventLoop
    private let logger: Logger
    private let accepted: (Int32) -> Void
    private var lastLogged: NIODeadline?
    private var failures = 0
    private var paused = false
    private(set) var isOpen = false

    init(descriptor: Int32, loop: EpollEventLoop, logger: Logger, accepted: @escaping (Int32) -> Void) {
        self.descriptor = descriptor
        self.loop = loop
        self.logger = logger
        self.accepted = accepted
    }

    func open() throws {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        try loop.register(descriptor, interest: .readable, handler: self)
        isOpen = true
    }

    /// Connections accepted per readiness at most: a storm of connections does not hold up the others' calls.
    private static let maxAccepts = 256

    func ready(_ readiness: EpollReadiness) {
        var count = 0
        while isOpen && !paused && count < Self.maxAccepts {
            let client = beacon_accept_nonblocking(descriptor)
            if client >= 0 {
                accepted(client)
                count += 1
                continue
            }
            let error = errno
            switch error {
            case EAGAIN, EWOULDBLOCK: return
            case EINTR, ECONNABORTED: continue
            default: failed(error)
            }
        }
    }

    private func failed(_ error: Int32) {
        failures += 1
        let now = NIODeadline.now()
        if lastLogged.map({ now.uptimeNanoseconds - $0.uptimeNanoseconds >= Self.logInterval }) ?? true {
            logger.error(
                "cannot accept connections, pausing accept: \(String(cString: strerror(error)))",
                metadata: ["failures": "\(failures)", "errno": "\(error)"])
            lastLogged = now
            failures = 0
        }
        paused = true
        try? loop.reregister(descriptor, interest: [])
        loop.assumeIsolated().scheduleTask(in: Self.pause) { [self] in
            paused = false
            guard isOpen else { return }
            do throws(EpollError) {
                try loop.reregister(descriptor, interest: .readable)
            } catch {
                // epoll_ctl fails here only when the kernel is out of memory: logged like a failed accept, and tried
                // again after another pause.
                failed(error.errno)
            }
        }
    }

    /// Stops accepting and closes the socket.
    func close() {
        guard isOpen else { return }
        isOpen = false
        loop.deregister(descriptor)
        Glibc.close(descriptor)
    }
}
