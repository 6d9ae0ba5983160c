import CSystemd
import CSystemdShims

/// Sends state changes to the service manager with `sd_notify(3)`.
///
/// Obtain one with ``fromEnvironment()``: it is `nil` when `NOTIFY_SOCKET` is unset, so a daemon started
/// outside systemd simply skips every notification. The socket is looked up by libsystemd on every call,
/// and the environment is left untouched, so processes started by the daemon do not lose it by accident.
public struct SystemdNotifier: Sendable {
    private init() {}

    /// A notifier when `NOTIFY_SOCKET` names a socket, `nil` otherwise.
    public static func fromEnvironment() -> SystemdNotifier? {
        guard let path = EnvironmentVariable.value(of: "NOTIFY_SOCKET"), !path.isEmpty else {
            return nil
        }
        return SystemdNotifier()
    }

    /// `READY=1`: start-up (or a reload) is complete and the daemon serves requests.
    public func ready() {
        send("READY=1")
    }

    /// `STATUS=`: a one-line, human-readable status shown by `systemctl status`.
    ///
    /// Line breaks in `text` are replaced by spaces, so the text cannot add assignments of its own.
    public func status(_ text: String) {
        send("STATUS=" + Self.singleLine(text))
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
        _ = sd_notify(0, state)
    }

    private static func singleLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}
