import Foundation

/// A datagram socket standing in for the service manager's `NOTIFY_SOCKET`: the daemon sends `READY=1` on it.
final class NotifySocket {
    let path: String
    private let descriptor: Int32
    private var messages: [String] = []

    init(path: String) throws {
        self.path = path
        unlink(path)
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw TestFailure("bind \(path): \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Waits until a message with the line `line` arrives, or throws after `timeout` or when `alive` turns false.
    func wait(for line: String, timeout: Duration = .seconds(30), alive: () -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while !messages.contains(where: { $0.split(separator: "\n").contains(Substring(line)) }) {
            guard ContinuousClock.now < deadline else { throw TestFailure("no \(line) in time; got \(messages)") }
            guard alive() else { throw TestFailure("the daemon exited before \(line); got \(messages)") }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // Short slices, so that a daemon that exits early is noticed.
            if poll(&entry, 1, 100) > 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count > 0 { messages.append(String(decoding: chunk[..<count], as: UTF8.self)) }
            }
        }
    }
}
