#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The service manager's watchdog (`WatchdogSec=` in the unit).
public enum Watchdog {
    /// How often to send ``SystemdNotifier/watchdogPing()``: half of `WATCHDOG_USEC`, when the watchdog is
    /// enabled for this process (`WATCHDOG_PID` unset or equal to our pid), `nil` otherwise.
    ///
    /// Read as `sd_watchdog_enabled(3)` reads it; the environment is left as it is.
    public static func pingInterval() -> Duration? {
        guard let usec = EnvironmentVariable.value(of: "WATCHDOG_USEC").flatMap({ UInt64($0) }), usec > 0 else {
            return nil
        }
        if let pid = EnvironmentVariable.value(of: "WATCHDOG_PID"), Int32(pid) != getpid() {
            return nil
        }
        return .microseconds(Int64(clamping: usec / 2))
    }
}
