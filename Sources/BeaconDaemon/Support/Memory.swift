import CMalloc

/// Tuning of the C library's allocator for a small, mostly idle daemon. The `beacond` program also limits glibc's
/// malloc to one arena before any thread starts.
enum Memory {
    /// Returns the allocator's free memory to the system.
    static func releaseFree() {
        beacon_malloc_release_free()
    }
}
