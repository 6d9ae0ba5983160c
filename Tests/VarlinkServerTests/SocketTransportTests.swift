import BeaconEventLoop
import Logging
import NIOCore
import Testing

@testable import VarlinkServer

#if canImport(Glibc)
    import Glibc
#endif

/// ``SocketTransport`` on its own, on a real loop and a real socket pair: output held while the peer does not read,
/// `isWritable` following the watermarks, the order of what arrives, a refusal written before the close, and the
/// peer's end of the stream.
@Suite("SocketTransport")
struct SocketTransportTests {
    /// A transport on `loop` for one end of a socket pair, with a reader of a server that admits nobody; the other
    /// end, blocking, is returned for the test to read and write.
    static func transport(on loop: EpollEventLoop) throws -> (NIOLoopBound<SocketTransport>, Int32) {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { throw IOError(errnoCode: errno, reason: "socketpair") }
        let flags = fcntl(pair[0], F_GETFL)
        _ = fcntl(pair[0], F_SETFL, flags | O_NONBLOCK)
        let descriptor = pair[0]
        let transport = try loop.submit {
            let transport = SocketTransport(descriptor: descriptor, loop: loop)
            let port = VarlinkServerPort(
                tick: VarlinkTick(eventLoop: loop), logger: Logger(label: "test"), limits: VarlinkServerLimits())
            transport.reader = VarlinkReader(port: port, transport: transport)
            return NIOLoopBound(transport, eventLoop: loop)
        }.wait()
        return (transport, pair[1])
    }

    /// Reads from blocking `descriptor` until `count` bytes came or the stream ended.
    static func read(_ descriptor: Int32, count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < count {
            let result = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if result <= 0 { break }
            bytes += chunk[0..<result]
        }
        return bytes
    }

    @Test("output the peer does not read is held; isWritable goes at the high mark, comes back below the low one")
    func watermarks() throws {
        let loop = try EpollEventLoop.start(name: "transport-test")
        defer { try? loop.syncShutdownGracefully() }
        let (bound, peer) = try Self.transport(on: loop)
        defer { close(peer) }
        let total = 1 << 20
        var expected: [UInt8] = []
        let state = try loop.submit { () -> (opened: Bool, held: Int?, writable: Bool) in
            let opened = bound.value.open()
            bound.value.setWaterMark(.init(low: 16 * 1024, high: 64 * 1024))
            // Sixteen writes of 64 KiB each, numbered so that their order shows.
            for index in 0..<16 {
                var buffer = ByteBufferAllocator().buffer(capacity: total / 16)
                buffer.writeRepeatingByte(UInt8(index), count: total / 16)
                bound.value.write(buffer, flush: index == 15)
            }
            return (opened, bound.value.heldBytes, bound.value.isWritable)
        }.wait()
        for index in 0..<16 { expected += [UInt8](repeating: UInt8(index), count: total / 16) }
        #expect(state.opened)
        // The socket takes some of it; far from all.
        #expect((state.held ?? 0) > 64 * 1024)
        #expect(!state.writable)
        let received = Self.read(peer, count: total)
        #expect(received.count == total)
        #expect(received == expected)
        // Everything was read: the loop wrote the rest and the transport is writable again, holding nothing.
        let deadline = NIODeadline.now() + .seconds(10)
        var after: (held: Int?, writable: Bool) = (nil, false)
        while NIODeadline.now() < deadline {
            after = try loop.submit { (bound.value.heldBytes, bound.value.isWritable) }.wait()
            if after.held == 0 && after.writable { break }
            usleep(5000)
        }
        #expect(after.held == 0 && after.writable)
    }

    @Test("new watermarks apply to what is held now, with the same hysteresis")
    func newWatermarks() throws {
        let loop = try EpollEventLoop.start(name: "transport-test")
        defer { try? loop.syncShutdownGracefully() }
        let (bound, peer) = try Self.transport(on: loop)
        defer { close(peer) }
        let states = try loop.submit { () -> [Bool] in
            _ = bound.value.open()
            var writable: [Bool] = []
            // Fill the socket's own buffer first, so that what follows is held.
            var filler = ByteBufferAllocator().buffer(capacity: 4 << 20)
            filler.writeRepeatingByte(1, count: 4 << 20)
            bound.value.setWaterMark(.init(low: 1, high: 64 << 20))
            bound.value.write(filler, flush: true)
            writable.append(bound.value.isWritable)
            // Lower marks than what is held: not writable at once.
            bound.value.setWaterMark(.init(low: 1024, high: 4096))
            writable.append(bound.value.isWritable)
            // A higher high mark alone does not make it writable: that takes going below the low mark.
            bound.value.setWaterMark(.init(low: 1, high: 64 << 20))
            writable.append(bound.value.isWritable)
            bound.value.setWaterMark(.init(low: 8 << 20, high: 64 << 20))
            writable.append(bound.value.isWritable)
            return writable
        }.wait()
        #expect(states == [true, false, false, true])
    }

    @Test("a refused peer reads the error, then the end of the stream; the close future completes")
    func refusal() throws {
        let loop = try EpollEventLoop.start(name: "transport-test")
        defer { try? loop.syncShutdownGracefully() }
        let (bound, peer) = try Self.transport(on: loop)
        defer { close(peer) }
        try loop.submit {
            _ = bound.value.open()
            bound.value.reader?.activate(credentials: .success(PeerCredentials(uid: 1, gid: 1, pid: 1, command: nil)))
        }.wait()
        let bytes = Self.read(peer, count: .max)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("org.varlink.service.PermissionDenied") || text.contains("PermissionDenied"))
        #expect(bytes.last == 0, "one whole message, then the end of the stream")
        try loop.submit { bound.value.closeFuture }.wait().wait()
        #expect(try loop.submit { bound.value.isActive }.wait() == false)
    }

    @Test("the peer's end of the stream closes the transport")
    func peerCloses() throws {
        let loop = try EpollEventLoop.start(name: "transport-test")
        defer { try? loop.syncShutdownGracefully() }
        let (bound, peer) = try Self.transport(on: loop)
        #expect(try loop.submit { bound.value.open() }.wait())
        close(peer)
        try loop.submit { bound.value.closeFuture }.wait().wait()
        #expect(try loop.submit { (bound.value.isActive, bound.value.heldBytes) }.wait() == (false, nil))
    }
}
