import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A datagram socket standing in for the service manager's `NOTIFY_SOCKET`: the daemon sends `READY=1` on it.
public final class NotifySocket {
    public let path: String
    private let descriptor: Int32
    /// Every message received so far, in order.
    public private(set) var messages: [String] = []

    public init(path: String) throws {
        self.path = path
        unlink(path)
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        // A failure here releases the socket through deinit.
        let result = try withUnixSocketAddress(path) { bind(descriptor, $0, $1) }
        guard result == 0 else { throw TestFailure("bind \(path): \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Waits until a message containing the line `line` arrives after the first `after` messages, and returns that
    /// message's index. Throws after `timeout`, or as soon as `alive` turns false.
    @discardableResult
    public func wait(
        for line: String,
        after: Int = 0,
        timeout: Duration = .seconds(30),
        alive: () -> Bool = { true }
    ) throws -> Int {
        let deadline = ContinuousClock.now + timeout
        var index = after
        while true {
            while index < messages.count {
                if messages[index].split(separator: "\n").contains(Substring(line)) { return index }
                index += 1
            }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("no \(line) from the daemon in time; got \(messages)")
            }
            guard alive() else { throw TestFailure("the daemon exited before sending \(line); got \(messages)") }
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
