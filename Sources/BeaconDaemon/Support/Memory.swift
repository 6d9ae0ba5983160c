#if canImport(Glibc)
    import CMalloc
#endif

/// Tuning of the C library's allocator for a small, mostly idle daemon.
enum Memory {
    /// One malloc arena for all threads: the daemon's few threads do not contend, and every arena keeps its own
    /// partly used pages.
    static func limitArenas() {
        #if canImport(Glibc)
            _ = mallopt(M_ARENA_MAX, 1)
        #endif
    }

    /// Returns the allocator's free memory to the system.
    static func releaseFree() {
        #if canImport(Glibc)
            _ = malloc_trim(0)
        #endif
    }
}
