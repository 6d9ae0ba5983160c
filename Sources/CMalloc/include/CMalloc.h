#ifndef BEACON_CMALLOC_H
#define BEACON_CMALLOC_H

/// Limits glibc's malloc to one arena for all threads; call it before any thread starts. The daemon's few threads
/// do not contend, and every arena keeps its own partly used pages. Does nothing elsewhere.
void beacon_malloc_limit_arenas(void);

/// Returns the allocator's free memory to the system (glibc's malloc_trim); does nothing elsewhere.
void beacon_malloc_release_free(void);

#endif
