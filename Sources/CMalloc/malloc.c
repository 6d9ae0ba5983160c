#include "CMalloc.h"

#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>

/// One malloc arena for all threads, set before any thread starts: the daemon's few threads do not contend, and
/// every arena keeps its own partly used pages.
__attribute__((constructor)) static void beacon_malloc_limit_arenas(void) {
    mallopt(M_ARENA_MAX, 1);
}

void beacon_malloc_release_free(void) {
    malloc_trim(0);
}
#else
void beacon_malloc_release_free(void) {}
#endif
