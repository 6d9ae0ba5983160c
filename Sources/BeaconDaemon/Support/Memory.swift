import CMalloc

/// Tuning of the C library's allocator for a small, mostly idle daemon. The `beacond` program also gives glibc's
/// malloc one arena and fixed mapping and trimming thresholds before any thread starts (`beacon_malloc_configure`).
enum Memory {
    /// Returns the allocator's free memory to the system.
    static func releaseFree() {
        beacon_malloc_release_free()
    }

    /// Unmaps the daemon's code that start-up alone ran (see `beacon_release_cold_text`); returns the KiB of
    /// address range released, or nil when the kernel refused.
    @discardableResult
    static func releaseColdCode() -> Int? {
        let released = beacon_release_cold_text()
        return released < 0 ? nil : Int(released)
    }

    /// Unmaps SQLite's code, which start-up ran to load the store and which only writes run again: an idle daemon
    /// keeps none of it. Returns the KiB of address range released, or nil when the kernel refused.
    @discardableResult
    static func releaseStoreCode() -> Int? {
        let released = beacon_release_library_code("libsqlite3")
        return released < 0 ? nil : Int(released)
    }
}
