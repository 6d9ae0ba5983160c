import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconSystemd

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

private let childMarker = "BEACON_TEST_SOCKET_ACTIVATION_CHILD"

/// Socket activation with the real `systemd-socket-activate`: it binds a socket, waits for the first
/// connection and then starts this test executable again, running only ``activatedChild()``, with the
/// listening socket at fd 3. The child answers the connection that caused the activation with what
/// ``SocketActivation/listenFileDescriptors()`` returned.
struct SocketActivationTests {

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate")))
    func activatedProcessServesTheFirstConnection() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/activate.sock"
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")

        let process = try ChildProcess(
            "/usr/bin/systemd-socket-activate",
            [
                "--listen=\(path)", "--setenv=\(childMarker)=1", executable,
                "--testing-library", "swift-testing", "--filter", "SocketActivationTests/activatedChild",
            ],
            error: .capture)
        defer {
            if process.isRunning {
                process.signal(SIGKILL)
                process.wait()
            }
        }
        let listening = "Listening on"
        var messages = process.readError(until: { String(decoding: $0, as: UTF8.self).contains(listening) })
        try #require(
            String(decoding: messages, as: UTF8.self).contains(listening),
            "systemd-socket-activate: \(String(decoding: messages, as: UTF8.self))"
        )

        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(client >= 0)
        defer { close(client) }
        try #require(try withUnixAddress(path) { connect(client, $0, $1) } == 0)

        let reply = try readLine(from: client, timeout: .seconds(60))
        #expect(reply == "fds=[3] path=\(path) cloexec=true unset=true")

        let status = process.wait(within: .seconds(60))
        messages += process.readError()
        #expect(status == 0, "\(String(decoding: messages, as: UTF8.self))")
    }

    /// Runs only inside the process started by ``activatedProcessServesTheFirstConnection()``.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[childMarker] != nil))
    func activatedChild() throws {
        let descriptors = SocketActivation.listenFileDescriptors()
        let unset = environmentValue("LISTEN_FDS") == nil && environmentValue("LISTEN_PID") == nil
        let listener = try #require(descriptors.first)
        let path = try boundPath(of: listener)
        let cloexec = fcntl(listener, F_GETFD) & FD_CLOEXEC != 0

        let connection = accept(listener, nil, nil)
        try #require(connection >= 0)
        defer { close(connection) }
        let reply = Array("fds=\(descriptors) path=\(path) cloexec=\(cloexec) unset=\(unset)\n".utf8)
        let written = reply.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
        #expect(written == reply.count)
    }

    /// Reads up to a newline (or end of stream) from `fd`, failing after `timeout`.
    private func readLine(from fd: Int32, timeout: Duration) throws -> String {
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        while !bytes.contains(UInt8(ascii: "\n")) {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw SystemCallError("read", code: ETIMEDOUT)
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + 1)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR {
                continue
            }
            guard ready > 0 else {
                continue
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else {
                break
            }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
