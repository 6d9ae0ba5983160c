#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a client reaches a varlink service: a Unix stream socket connected to its path. ``BlockingVarlinkConnection``
/// and the asynchronous client of the `BeaconClient` module connect through it.
public enum UnixStreamSocket {
    /// Returns a close-on-exec socket connected to `socketPath`, in non-blocking mode.
    ///
    /// A Unix-socket `connect` waits only for room in the daemon's listen queue. `timeout` bounds that wait: `nil`
    /// waits for ever, and `.zero` does not wait at all (the socket is non-blocking from the start, so a full queue
    /// is ``BlockingVarlinkError/Code/timedOut`` at once). Throws ``BlockingVarlinkError/Code/cannotConnect`` when
    /// no socket exists at the path or nobody listens on it, ``BlockingVarlinkError/Code/invalidAddress`` when the
    /// path is too long for a socket address.
    public static func connect(to socketPath: String, timeout: Duration?) throws(BlockingVarlinkError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !pathBytes.isEmpty, pathBytes.count < capacity, !pathBytes.contains(0) else {
            throw BlockingVarlinkError(
                code: .invalidAddress,
                message: "the socket path \"\(socketPath)\" is empty or longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }

        #if canImport(Darwin)
            let socketType = SOCK_STREAM
        #else
            let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #endif
        let descriptor = socket(AF_UNIX, socketType, 0)
        guard descriptor >= 0 else {
            throw BlockingVarlinkError(code: .systemCallFailed, message: "cannot create a socket", systemError: errno)
        }
        let waits = timeout.map { $0 > .zero } ?? true
        if !waits {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        } else if let timeout {
            // SO_SNDTIMEO bounds the wait for room in the listen queue.
            let (seconds, attoseconds) = max(timeout, .milliseconds(1)).components
            var interval = timeval(
                tv_sec: .init(min(seconds, Int64(Int32.max))), tv_usec: .init(attoseconds / 1_000_000_000_000))
            _ = setsockopt(
                descriptor, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        }

        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        var result: Int32
        repeat {
            result = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(descriptor, $0, length) }
            }
        } while result != 0 && errno == EINTR
        if result != 0 {
            let number = errno
            _ = close(descriptor)
            throw connectError(number, socketPath: socketPath)
        }

        if timeout != nil && waits {
            var none = timeval()
            _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        }
        if waits { _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK) }
        #if canImport(Darwin)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        return descriptor
    }

    private static func connectError(_ number: Int32, socketPath: String) -> BlockingVarlinkError {
        let reason: String
        switch number {
        case ENOENT: reason = "no socket at \(socketPath); is the daemon running?"
        case ECONNREFUSED: reason = "nobody is listening on \(socketPath); is the daemon running?"
        case EACCES, EPERM: reason = "no permission to connect to \(socketPath)"
        case EAGAIN, EINPROGRESS, ETIMEDOUT:
            return BlockingVarlinkError(
                code: .timedOut, message: "timed out connecting to \(socketPath)", systemError: number)
        default: reason = "cannot connect to \(socketPath)"
        }
        return BlockingVarlinkError(code: .cannotConnect, message: reason, systemError: number)
    }
}

// The C library's connect, under a name that ``UnixStreamSocket/connect(to:timeout:)`` does not hide.
private func systemConnect(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(descriptor, address, length)
}
