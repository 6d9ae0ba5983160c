import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A datagram socket that receives the daemon's sd_notify messages (its NOTIFY_SOCKET).
final class NotifySocket {
    let path: String
    private let fd: Int32
    private var messages: [String] = []

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

    /// Waits until a message with the line `line` arrives, while `alive` holds, for at most `timeout`.
    func wait(for line: String, timeout: Duration = .seconds(30), alive: () -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        var index = 0
        while true {
            while index < messages.count {
                if messages[index].split(separator: "\n").contains(Substring(line)) { return }
                index += 1
            }
            guard ContinuousClock.now < deadline else { throw TestFailure("no \(line) in time; got \(messages)") }
            guard alive() else { throw TestFailure("the daemon exited before \(line); got \(messages)") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Bounded slices, so that a daemon that exits is noticed.
            if poll(&descriptor, 1, 200) > 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 { messages.append(String(decoding: chunk[..<count], as: UTF8.self)) }
            }
        }
    }
}
