#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

struct SystemCallError: Error, CustomStringConvertible {
    var call: String
    var code: Int32

    init(_ call: String, code: Int32 = errno) {
        self.call = call
        self.code = code
    }

    var description: String { "\(call): \(String(cString: strerror(code)))" }
}

/// A private directory under /tmp, removed with everything in it when released.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/beacon-systemd-test-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        guard let created else {
            throw SystemCallError("mkdtemp")
        }
        path = created
    }

    deinit {
        removeTree(path)
    }

    private func removeTree(_ path: String) {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name == "." || name == ".." {
                    continue
                }
                let child = path + "/" + name
                var status = stat()
                if lstat(child, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
                    removeTree(child)
                } else {
                    unlink(child)
                }
            }
            closedir(directory)
        }
        rmdir(path)
    }
}

/// Calls `body` with a `sockaddr_un` for `path`.
func withUnixAddress<Result>(
    _ path: String,
    _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result
) throws -> Result {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
        throw SystemCallError("sockaddr_un", code: ENAMETOOLONG)
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return try withUnsafePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            try body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
}

/// The path a Unix socket is bound to, from `getsockname(2)`.
func boundPath(of fd: Int32) throws -> String {
    var address = sockaddr_un()
    var length = socklen_t(MemoryLayout<sockaddr_un>.size)
    let result = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard result == 0 else {
        throw SystemCallError("getsockname")
    }
    return withUnsafeBytes(of: address.sun_path) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
}

/// An AF_UNIX datagram socket bound in a private directory, standing in for the service manager's
/// notification socket or for journald.
final class DatagramReceiver {
    let path: String
    private let directory: TemporaryDirectory?
    private let fd: Int32

    convenience init() throws {
        let directory = try TemporaryDirectory()
        try self.init(path: directory.path + "/socket", keeping: directory)
    }

    /// Binds a socket at `path`, whose directory the caller owns.
    convenience init(path: String) throws {
        try self.init(path: path, keeping: nil)
    }

    private init(path: String, keeping directory: TemporaryDirectory?) throws {
        self.directory = directory
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw SystemCallError("socket")
        }
        let result = try withUnixAddress(path) { bind(fd, $0, $1) }
        guard result == 0 else {
            let error = SystemCallError("bind")
            close(fd)
            throw error
        }
    }

    deinit {
        close(fd)
    }

    /// The next datagram, or `nil` when none arrives within `timeout`.
    func receive(timeout: Duration = .seconds(10)) throws -> [UInt8]? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        )
        var ready: Int32
        repeat {
            ready = poll(&descriptor, 1, milliseconds)
        } while ready < 0 && errno == EINTR
        guard ready >= 0 else {
            throw SystemCallError("poll")
        }
        if ready == 0 {
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else {
            throw SystemCallError("recv")
        }
        return Array(buffer[..<count])
    }

    /// The next datagram as text, or `nil` when none arrives within `timeout`.
    func receiveText(timeout: Duration = .seconds(10)) throws -> String? {
        try receive(timeout: timeout).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// Sets or unsets environment variables for the duration of `body`, then restores the previous values.
func withEnvironment<Result>(_ values: [String: String?], _ body: () throws -> Result) rethrows -> Result {
    var previous: [String: String?] = [:]
    for (name, value) in values {
        previous[name] = getenv(name).map { String(cString: $0) }
        if let value {
            setenv(name, value, 1)
        } else {
            unsetenv(name)
        }
    }
    defer {
        for (name, value) in previous {
            if let value {
                setenv(name, value, 1)
            } else {
                unsetenv(name)
            }
        }
    }
    return try body()
}

func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}
