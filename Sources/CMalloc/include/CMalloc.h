#ifndef BEACON_CMALLOC_H
#define BEACON_CMALLOC_H

/// Limits glibc's malloc to one arena for all threads; call it before any thread starts. The daemon's few threads
/// do not contend, and every arena keeps its own partly used pages. Does nothing elsewhere.
void beacon_malloc_limit_arenas(void);

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
