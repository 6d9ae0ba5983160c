#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Sockets passed by the service manager (or `systemd-socket-activate`).
public enum SocketActivation {
    /// The first descriptor the service manager passes.
    static let firstDescriptor: Int32 = 3

    /// File descriptors passed with `LISTEN_FDS` / `LISTEN_PID`, starting at 3, as `sd_listen_fds(3)` reads them.
    ///
    /// Empty when the process was not socket-activated (or `LISTEN_PID` names another process).
    /// The descriptors get `FD_CLOEXEC`, and `LISTEN_FDS`, `LISTEN_PID` and `LISTEN_FDNAMES` are unset, so
    /// processes started later do not mistake them for their own. Call it at start-up, before other threads read
    /// the environment.
    public static func listenFileDescriptors() -> [Int32] {
        defer {
            for name in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] { unsetenv(name) }
        }
        guard let pid = EnvironmentVariable.value(of: "LISTEN_PID").flatMap({ Int32($0) }), pid == getpid(),
            let count = EnvironmentVariable.value(of: "LISTEN_FDS").flatMap({ Int32($0) }), count > 0,
            count <= Int32.max - firstDescriptor
        else {
            return []
        }
        let descriptors = Array(firstDescriptor..<firstDescriptor + count)
        for descriptor in descriptors {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
        return descriptors
    }
}
