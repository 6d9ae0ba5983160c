#include "CMalloc.h"

#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>

void beacon_malloc_configure(void) {
    mallopt(M_ARENA_MAX, 1);
    // Fixed thresholds: a tick's buffers (a watcher's batch of changes, a writer's replies) stay in the heap and
    // are used again by the next tick, instead of being mapped and faulted in anew. glibc's own variables win.
    if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL) {
        mallopt(M_MMAP_THRESHOLD, BEACON_MALLOC_MMAP_THRESHOLD);
    }
    if (getenv("MALLOC_TRIM_THRESHOLD_") == NULL) {
        mallopt(M_TRIM_THRESHOLD, BEACON_MALLOC_TRIM_THRESHOLD);
    }
}

void beacon_malloc_release_free(void) {
    malloc_trim(0);
}
#else
void beacon_malloc_configure(void) {}
void beacon_malloc_release_free(void) {}
#endif
