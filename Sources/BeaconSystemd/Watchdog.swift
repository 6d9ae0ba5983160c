import CSystemd

/// The service manager's watchdog (`WatchdogSec=` in the unit).
public enum Watchdog {
    /// How often to send ``SystemdNotifier/watchdogPing()``: half of `WATCHDOG_USEC`, when the watchdog is
    /// enabled for this process (`WATCHDOG_PID` unset or equal to our pid), `nil` otherwise.
    ///
    /// Read with `sd_watchdog_enabled(3)`; the environment is left as it is.
    public static func pingInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else {
            return nil
        }
        return .microseconds(Int64(clamping: usec / 2))
    }
}
