import Logging
import NIOCore

/// Rate limits log lines per source (a connection, a uid) and reason: at most ``burst`` lines per ``interval``,
/// then a line saying how many were suppressed when the next one is allowed, the way journald limits a service.
///
/// Used on the event loop only.
package final class LogLimiter {
    struct Key: Hashable {
        var source: String
        var reason: String
    }

    private struct Window {
        var start: UInt64
        var count: Int
        var suppressed: Int
    }

    let interval: UInt64
    let burst: Int
    private var windows: [Key: Window] = [:]

    package init(interval: TimeAmount = .seconds(10), burst: Int = 5) {
        self.interval = UInt64(interval.nanoseconds)
        self.burst = burst
    }

    /// Logs `message` unless `source` logged `reason` ``burst`` times in this interval.
    package func log(
        _ logger: Logger,
        _ level: Logger.Level,
        source: String,
        reason: String,
        _ message: @autoclosure () -> Logger.Message,
        metadata: @autoclosure () -> Logger.Metadata = [:]
    ) {
        let now = NIODeadline.now().uptimeNanoseconds
        let key = Key(source: source, reason: reason)
        var window = windows[key] ?? Window(start: now, count: 0, suppressed: 0)
        if now - window.start >= interval {
            if window.suppressed > 0 {
                logger.log(
                    level: level, "suppressed \(window.suppressed) messages: \(reason)",
                    metadata: ["source": "\(source)"])
            }
            window = Window(start: now, count: 0, suppressed: 0)
        }
        if window.count < burst {
            window.count += 1
            logger.log(level: level, message(), metadata: metadata())
        } else {
            window.suppressed += 1
        }
        windows[key] = window
        if windows.count > 4096 { prune(now: now, logger: logger, level: level) }
    }

    /// Forgets windows that ended, reporting what they suppressed.
    private func prune(now: UInt64, logger: Logger, level: Logger.Level) {
        for (key, window) in windows where now - window.start >= interval {
            if window.suppressed > 0 {
                logger.log(
                    level: level, "suppressed \(window.suppressed) messages: \(key.reason)",
                    metadata: ["source": "\(key.source)"])
            }
            windows[key] = nil
        }
    }
}
