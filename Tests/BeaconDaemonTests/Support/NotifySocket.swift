import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A datagram socket standing in for the service manager's NOTIFY_SOCKET.
final class NotifySocket {
    let path: String
    private let fd: Int32
    /// Every message received so far, in order.
    private(set) var messages: [String] = []

    init(path: String) throws {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw TestFailure("bind \(path): \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Waits until a message containing the line `line` arrives after the first `after` messages; returns its
    /// index.
    @discardableResult
    func wait(for line: String, after: Int = 0, timeout: Duration = .seconds(30), alive: () -> Bool = { true })
        throws -> Int
    {
        let deadline = ContinuousClock.now + timeout
        var index = after
        while true {
            while index < messages.count {
                if messages[index].split(separator: "\n").contains(Substring(line)) { return index }
                index += 1
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TestFailure("no \(line) from the daemon in time; got \(messages)") }
            guard alive() else { throw TestFailure("the daemon exited before sending \(line); got \(messages)") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Short slices so that a daemon that exits early is noticed.
            let ready = poll(&descriptor, 1, 200)
            if ready > 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    messages.append(String(decoding: chunk[..<count], as: UTF8.self))
                }
            }
        }
    }
}
