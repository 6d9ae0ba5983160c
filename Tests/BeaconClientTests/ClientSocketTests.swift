import BeaconBlockingClient
import BeaconProtocol
import BeaconTestSupport
import NIOCore
import Testing

@testable import BeaconClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The client's socket on its event loop, against a peer that the test plays on the other end of a socket pair: the
/// peer writes what a daemon cannot be made to send (an invalid reply, a reply nobody asked for) and reads only when
/// the test says so.
@Suite("ClientSocket")
struct ClientSocketTests {
    /// The test's end of the pair, read and written with bounded waits.
    final class Peer {
        let fd: Int32
        private var received: [UInt8] = []

        init(_ fd: Int32) { self.fd = fd }
        deinit { _ = Glibc.close(fd) }

        /// Reads until `count` frames have come (at most 10 s); the frames, without their NULs.
        func frames(_ count: Int) throws -> [[UInt8]] {
            var frames: [[UInt8]] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                while frames.count < count, let end = received.firstIndex(of: 0) {
                    frames.append(Array(received[..<end]))
                    received.removeSubrange(...end)
                }
                if frames.count == count { return frames }
                guard ContinuousClock.now < deadline else { throw TestFailure("\(frames.count) of \(count) frames") }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 100)
                guard ready >= 0 else { throw TestFailure("poll failed: \(errno)") }
                if ready == 0 { continue }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 { received += buffer[..<n] }
                if n == 0 { throw TestFailure("the client closed after \(frames.count) frames") }
            }
        }

        /// Writes all of `bytes` (the peer's end is blocking).
        func write(_ bytes: [UInt8]) throws {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                guard n > 0 else { throw TestFailure("write failed: \(errno)") }
                offset += n
            }
        }

        func write(_ text: String) throws { try write(Array(text.utf8) + [0]) }
    }

    /// A started client socket and the peer at the other end.
    static func pair(maxMessageSize: Int = 1 << 20) async throws -> (ClientSocket, Peer) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw TestFailure("socketpair failed: \(errno)")
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let socket = ClientSocket(descriptor: fds[0], on: try ClientLoop.shared(), maxMessageSize: maxMessageSize)
        try await socket.start()
        return (socket, Peer(fds[1]))
    }

    /// The outcome of `future`, waited for at most 10 s.
    static func outcome<T: Sendable>(_ future: EventLoopFuture<T>, _ what: String) async throws -> Result<T, any Error>
    {
        let box = ResultBox<Result<T, any Error>>()
        future.whenComplete { box.fulfill(.success($0)) }
        return try await box.value(within: .seconds(10), what)
    }

    static func single(_ socket: ClientSocket, _ method: String) -> EventLoopFuture<[String: JSONValue]> {
        let promise = socket.loop.makePromise(of: [String: JSONValue].self)
        socket.send(VarlinkCall(method: method, parameters: [:]), target: .single(promise))
        return promise.futureResult
    }

    /// A call on the closed `socket` fails with ``BeaconError/Code/connectionClosed``.
    static func expectClosedToCalls(_ socket: ClientSocket) async throws {
        let later = try await outcome(single(socket, "org.example.Test.Later"), "a call after the close")
        if case .failure(let error) = later {
            #expect((error as? BeaconError)?.code == .connectionClosed)
        } else {
            Issue.record("a call on a closed connection succeeded")
        }
    }

    @Test("calls that the socket cannot take at once wait for room and go out whole and in order")
    func heldOutput() async throws {
        let (socket, peer) = try await Self.pair()
        defer { socket.close() }
        let value = String(repeating: "v", count: 64 << 10)
        // All written in one job of the loop, before the peer reads: 4 MiB do not fit in the socket's buffer, so
        // most of them go out only when the loop reports room.
        try await socket.loop.submit {
            for index in 0..<64 {
                socket.send(
                    VarlinkCall(
                        method: "org.example.Test.Big", parameters: ["n": .int(Int64(index)), "value": .string(value)]),
                    target: nil)
            }
        }.get()
        let frames = try peer.frames(64)
        let calls = try frames.map { try VarlinkCall(parsing: $0) }
        #expect(calls.map { $0.parameters["n"] } == (0..<64).map { .int(Int64($0)) })
        #expect(calls.allSatisfy { $0.parameters["value"] == .string(value) })
        #expect(socket.isActive)
    }

    @Test("a reply larger than one read arrives whole; replies go to their calls in order")
    func largeReply() async throws {
        let (socket, peer) = try await Self.pair()
        defer { socket.close() }
        let first = Self.single(socket, "org.example.Test.First")
        let second = Self.single(socket, "org.example.Test.Second")
        let calls = try peer.frames(2).map { try VarlinkCall(parsing: $0) }
        #expect(calls.map(\.method) == ["org.example.Test.First", "org.example.Test.Second"])
        let large = String(repeating: "x", count: 300 << 10)
        try peer.write("{\"parameters\":{\"value\":\"\(large)\"}}")
        try peer.write("{\"parameters\":{\"value\":\"small\"}}")
        #expect(try await Self.outcome(first, "the first reply").get()["value"] == .string(large))
        #expect(try await Self.outcome(second, "the second reply").get()["value"] == .string("small"))
    }

    @Test("an invalid reply fails the call and closes the connection; later calls fail as closed")
    func invalidReply() async throws {
        let (socket, peer) = try await Self.pair()
        let call = Self.single(socket, "org.example.Test.Call")
        _ = try peer.frames(1)
        try peer.write("{\"parameters\":")
        let failure = try await Self.outcome(call, "the failed call")
        if case .failure(let error) = failure {
            #expect((error as? BeaconError)?.code == .invalidReply)
        } else {
            Issue.record("an invalid reply was taken")
        }
        _ = try await Self.outcome(socket.closeFuture, "the close")
        #expect(!socket.isActive)
        try await Self.expectClosedToCalls(socket)
    }

    @Test("a reply that no call waits for closes the connection")
    func unexpectedReply() async throws {
        let (socket, peer) = try await Self.pair()
        try peer.write("{\"parameters\":{}}")
        _ = try await Self.outcome(socket.closeFuture, "the close")
        #expect(!socket.isActive)
    }

    @Test("the peer's end of the stream fails the waiting calls, streamed ones included")
    func peerClosed() async throws {
        let (socket, peer) = try await Self.pair()
        let streamed = ResultBox<BeaconError>()
        let subscription = StreamSubscription<[String: JSONValue]>(decode: StreamSubscription.plainReplies) { event in
            if case .failed(let error) = event { streamed.fulfill(.success(error)) }
        }
        socket.send(
            VarlinkCall(method: "org.example.Test.Stream", parameters: [:], more: true), target: .stream(subscription))
        _ = try peer.frames(1)
        _ = Glibc.shutdown(peer.fd, Int32(SHUT_RDWR))
        #expect(try await streamed.value(within: .seconds(10), "the stream's end").code == .connectionClosed)
        _ = try await Self.outcome(socket.closeFuture, "the close")
        try await Self.expectClosedToCalls(socket)
    }

    @Test("a connect that must not wait fails at once when the listen queue is full")
    func fullListenQueue() throws {
        let path = "/tmp/beacon-client-socket-\(getpid()).sock"
        unlink(path)
        defer { unlink(path) }
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { _ = Glibc.close(listener) }
        guard try withUnixSocketAddress(path, { bind(listener, $0, $1) }) == 0, listen(listener, 0) == 0 else {
            throw TestFailure("cannot listen on \(path): \(errno)")
        }
        var connected: [Int32] = []
        defer { for fd in connected { _ = Glibc.close(fd) } }
        var refused: BlockingVarlinkError?
        for _ in 0..<16 {
            do {
                connected.append(try UnixStreamSocket.connect(to: path, timeout: .zero))
            } catch {
                refused = error
                break
            }
        }
        #expect(refused?.code == .timedOut)
        #expect(!connected.isEmpty)
    }
}
