import BeaconProtocol
import BeaconTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small blocking varlink client on a raw Unix socket, with a deadline on every wait.
final class VarlinkTestClient {
    private(set) var fd: Int32
    private var buffer: [UInt8] = []
    private var peerClosed = false

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        let result: Int32
        do {
            let fd = fd
            result = try withUnixSocketAddress(path) { connect(fd, $0, $1) }
        } catch {
            close()
            throw error
        }
        guard result == 0 else {
            let message = String(cString: strerror(errno))
            close()
            throw TestFailure("connect \(path): \(message)")
        }
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Sends raw bytes; returns false when the peer is gone.
    @discardableResult
    func sendRaw(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    func send(
        _ method: String,
        _ parameters: [String: JSONValue] = [:],
        more: Bool = false,
        oneway: Bool = false
    ) {
        var bytes: [UInt8] = []
        VarlinkCall(method: method, parameters: parameters, more: more, oneway: oneway).encode(into: &bytes)
        sendRaw(bytes)
    }

    /// Calls a method and returns its (single or first) reply.
    func call(_ method: String, _ parameters: [String: JSONValue] = [:], more: Bool = false) throws -> VarlinkReply {
        send(method, parameters, more: more)
        return try receive()
    }

    /// Calls a method and returns its parameters, failing on an error reply.
    func parameters(_ method: String, _ parameters: [String: JSONValue] = [:]) throws -> [String: JSONValue] {
        let reply = try call(method, parameters)
        if let error = reply.error {
            throw TestFailure("\(method) failed: \(error) \(JSONValue.object(reply.parameters).jsonString)")
        }
        return reply.parameters
    }

    /// The next reply, waiting at most `timeout`.
    func receive(timeout: Duration = .seconds(20)) throws -> VarlinkReply {
        guard let frame = try receiveFrame(timeout: timeout) else {
            throw TestFailure("the connection closed while a reply was expected")
        }
        return try VarlinkReply(parsing: frame, limits: JSONLimits(maxDepth: 256, maxBytes: Int.max))
    }

    /// The next frame, or `nil` when the peer closed the connection.
    func receiveFrame(timeout: Duration) throws -> [UInt8]? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let end = buffer.firstIndex(of: 0) {
                let frame = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                return frame
            }
            if peerClosed { return nil }
            try fill(until: deadline)
        }
    }

    /// Waits until the peer closes the connection, discarding what arrives; returns whether it closed in time.
    func waitForClose(timeout: Duration = .seconds(20)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !peerClosed {
            do {
                try fill(until: deadline)
            } catch {
                return false
            }
            buffer.removeAll()
        }
        return true
    }

    /// Whether a frame arrives within `timeout` (used to check that nothing more is sent).
    func hasPendingFrame(within timeout: Duration) throws -> Bool {
        if buffer.contains(0) { return true }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline && !peerClosed {
            do {
                try fill(until: deadline)
            } catch is TestFailure {
                return buffer.contains(0)
            }
            if buffer.contains(0) { return true }
        }
        return buffer.contains(0)
    }

    private func fill(until deadline: ContinuousClock.Instant) throws {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw TestFailure("timed out waiting for the daemon") }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            max(1, remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 {
            if errno == EINTR { return }
            throw TestFailure("poll: \(String(cString: strerror(errno)))")
        }
        if ready == 0 { throw TestFailure("timed out waiting for the daemon") }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count > 0 {
            buffer.append(contentsOf: chunk[..<count])
        } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
            peerClosed = true
        }
    }
}
