import BeaconEventLoop
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reads a descriptor that delivers records (a signalfd, an inotify descriptor) on the daemon's ``EpollEventLoop``,
/// and hands each read to `received`. It owns the descriptor and closes it when it stops.
final class DescriptorReader: EpollHandler {
    let descriptor: Int32
    private let loop: EpollEventLoop
    private let readSize: Int
    private let received: (ByteBuffer) -> Void
    private let ended: () -> Void
    private var buffer: ByteBuffer
    private(set) var isOpen = false

    /// Reads `descriptor` in reads of `readSize` bytes, which must hold at least one whole record (a shorter read of
    /// a signalfd or an inotify descriptor fails). `ended` is called once, when it stops.
    init(
        descriptor: Int32, loop: EpollEventLoop, readSize: Int, received: @escaping (ByteBuffer) -> Void,
        ended: @escaping () -> Void = {}
    ) {
        self.descriptor = descriptor
        self.loop = loop
        self.readSize = readSize
        self.received = received
        self.ended = ended
        buffer = ByteBufferAllocator().buffer(capacity: readSize)
    }

    /// Starts reading; on the loop. On failure the descriptor is closed.
    func start() throws {
        do {
            try loop.register(descriptor, interest: .readable, handler: self)
            isOpen = true
        } catch {
            close(descriptor)
            throw error
        }
    }

    func ready(_ readiness: EpollReadiness) {
        while isOpen {
            buffer.clear(minimumCapacity: readSize)
            var result = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: readSize) { space in
                result = read(descriptor, space.baseAddress, readSize)
                return max(result, 0)
            }
            if result > 0 {
                received(buffer)
                continue
            }
            if result < 0 && errno == EINTR { continue }
            if result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            stop()
        }
    }

    /// Stops reading and closes the descriptor; on the loop.
    func stop() {
        guard isOpen else { return }
        isOpen = false
        loop.deregister(descriptor)
        close(descriptor)
        ended()
    }
}
