#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The system's real-time clock, in the unit the protocol reports times in.
package enum WallClock {
    /// Microseconds since the Unix epoch.
    package static func nowUsec() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000
    }
}
