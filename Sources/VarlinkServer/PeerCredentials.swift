import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The credentials of a connected peer, from `SO_PEERCRED`, and the command name of its process.
public struct PeerCredentials: Sendable, Hashable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    /// `/proc/PID/comm`, when readable.
    public var command: String?

    public init(uid: UInt32, gid: UInt32, pid: Int32, command: String?) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.command = command
    }

    /// Asks the kernel for the credentials of the peer of `descriptor`, a connected Unix stream socket.
    static func of(descriptor: Int32) -> Result<PeerCredentials, any Error> {
        var credentials = KernelCredentials()
        var length = socklen_t(MemoryLayout<KernelCredentials>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            return .failure(IOError(errnoCode: errno, reason: "getsockopt(SO_PEERCRED)"))
        }
        return .success(
            PeerCredentials(
                uid: credentials.uid,
                gid: credentials.gid,
                pid: credentials.pid,
                command: credentials.pid > 0 ? command(of: credentials.pid) : nil
            ))
    }

    /// The process name of `pid` (at most 15 bytes, as the kernel keeps it).
    static func command(of pid: Int32) -> String? {
        let fd = open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        var end = count
        while end > 0 && (bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == 0) { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The kernel's `struct ucred` (pid, uid, gid: three 32-bit fields in this order), which Glibc declares only
    /// with `_GNU_SOURCE`. Swift lays out a struct of fixed-size integer fields in declaration order, like C.
    struct KernelCredentials: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

}
