#ifndef BEACON_CMALLOC_H
#define BEACON_CMALLOC_H

/// Allocations from this size on get their own mapping (glibc's M_MMAP_THRESHOLD; its default is 128 KiB).
#define BEACON_MALLOC_MMAP_THRESHOLD (512 * 1024)
/// Free memory at the top of the heap is returned to the system beyond this size (M_TRIM_THRESHOLD; 128 KiB).
#define BEACON_MALLOC_TRIM_THRESHOLD (1024 * 1024)

/// Tunes glibc's malloc for the daemon; call it before any thread starts. One arena for all threads: the daemon's
/// few threads do not contend, and every arena keeps its own partly used pages. Fixed mapping and trimming
/// thresholds (BEACON_MALLOC_*, unless glibc's MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ variables set
/// them): with glibc's defaults, a burst's buffers of 100-300 KiB were mapped, or the heap trimmed, and their
/// pages faulted in again at every tick. Does nothing elsewhere.
void beacon_malloc_configure(void);

/// Returns the allocator's free memory to the system (glibc's malloc_trim); does nothing elsewhere.
void beacon_malloc_release_free(void);

/// Drops from the process's page tables the pages of code that lie after the functions the release link lays out
/// first (scripts/beacond.order: those that start-up and the common calls run): code that ran only during start-up,
/// and the pages the kernel mapped around it. Code that runs again later is mapped again at its first call.
/// Returns the KiB of address range released, 0 where there is none, -1 when the kernel refused.
int beacon_release_cold_text(void);
/// Drops from the process's page tables the pages of code of the first loaded library whose path contains `name`
/// (e.g. libsqlite3, which only start-up and writes run); they are mapped again when they run again. Returns the KiB
/// of address range released, 0 when no such library is loaded, -1 when the kernel refused.
int beacon_release_library_code(const char *name);

#endif
