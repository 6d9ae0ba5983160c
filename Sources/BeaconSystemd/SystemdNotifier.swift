import CSystemdShims

/// Sends state changes to the service manager, as `sd_notify(3)` does: one datagram of newline-separated
/// assignments to the socket that `NOTIFY_SOCKET` names (a path, or `@` and a name in the abstract namespace).
///
/// Obtain one with ``fromEnvironment()``: it is `nil` when `NOTIFY_SOCKET` is unset, so a daemon started
/// outside systemd simply skips every notification. The environment is left untouched, so processes started by
/// the daemon do not lose it by accident.
public struct SystemdNotifier: Sendable {
    private let socket: String

    /// A notifier when `NOTIFY_SOCKET` names a socket, `nil` otherwise.
    public static func fromEnvironment() -> SystemdNotifier? {
        guard let path = EnvironmentVariable.value(of: "NOTIFY_SOCKET"), !path.isEmpty else {
            return nil
        }
        return SystemdNotifier(socket: path)
    }

    /// `READY=1`: start-up (or a reload) is complete and the daemon serves requests.
    public func ready() {
        send("READY=1")
    }

    /// `STATUS=`: a one-line, human-readable status shown by `systemctl status`.
    ///
    /// Line breaks in `text` are replaced by spaces, so the text cannot add assignments of its own.
    /// It is dropped rather than waited for when the service manager's queue is full: the daemon's event loop
    /// calls this, and must never wait for a reader (the next status line replaces it anyway).
    public func status(_ text: String) {
        var bytes = Array(("STATUS=" + Self.singleLine(text)).utf8)
        _ = bytes.withUnsafeMutableBytes { beacon_unix_datagram_try_send(socket, $0.baseAddress, $0.count) }
    }

    /// `RELOADING=1` with the current `CLOCK_MONOTONIC` time in `MONOTONIC_USEC=`, as `Type=notify-reload`
    /// requires. Follow it with ``ready()`` once the new configuration is in effect.
    public func reloading() {
        send("RELOADING=1\nMONOTONIC_USEC=\(beacon_monotonic_usec())")
    }

    /// `STOPPING=1`: shutdown has begun.
    public func stopping() {
        send("STOPPING=1")
    }

    /// `WATCHDOG=1`: a keep-alive ping; see ``Watchdog/pingInterval()``.
    public func watchdogPing() {
        send("WATCHDOG=1")
    }

    /// Sends `state` as it is: newline-separated `VARIABLE=value` assignments.
    ///
    /// Failures are ignored: the service manager is the only reader, and there is nobody else to tell.
    public func send(_ state: String) {
        var bytes = Array(state.utf8)
        _ = bytes.withUnsafeMutableBytes { beacon_unix_datagram_send(socket, $0.baseAddress, $0.count) }
    }

    private static func singleLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}
