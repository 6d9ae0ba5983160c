#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Times and durations as people read them.
enum TimeText {
    /// Microseconds since the Unix epoch as local time, `2025-01-31 14:05:09`.
    static func localTime(microseconds: Int64) -> String {
        var seconds = time_t(microseconds / 1_000_000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return String(microseconds) }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The current time in microseconds since the Unix epoch.
    static func nowMicroseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000
    }

    /// A duration in microseconds as `3d 4h`, `2h 5min`, `4min 10s`, `12s`.
    static func duration(microseconds: Int64) -> String {
        let seconds = max(microseconds, 0) / 1_000_000
        let (days, hours, minutes) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60)
        if days > 0 { return "\(days)d \(hours)h" }
        if hours > 0 { return "\(hours)h \(minutes)min" }
        if minutes > 0 { return "\(minutes)min \(seconds % 60)s" }
        return "\(seconds)s"
    }
}
