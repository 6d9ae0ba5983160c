import CSystemd

/// Sockets passed by the service manager (or `systemd-socket-activate`).
public enum SocketActivation {
    /// File descriptors passed with `LISTEN_FDS` / `LISTEN_PID`, starting at 3, read with `sd_listen_fds(3)`.
    ///
    /// Empty when the process was not socket-activated (or `LISTEN_PID` names another process).
    /// The descriptors get `FD_CLOEXEC`, and `LISTEN_FDS`, `LISTEN_PID` and `LISTEN_FDNAMES` are unset, so
    /// processes started later do not mistake them for their own.
    public static func listenFileDescriptors() -> [Int32] {
        let count = sd_listen_fds(1)
        guard count > 0 else {
            return []
        }
        let first = Int32(SD_LISTEN_FDS_START)
        return Array(first..<first + count)
    }
}
