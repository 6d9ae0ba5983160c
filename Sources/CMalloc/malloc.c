#include "CMalloc.h"

#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>

void beacon_malloc_limit_arenas(void) {
    mallopt(M_ARENA_MAX, 1);
}

void beacon_malloc_release_free(void) {
    malloc_trim(0);
}
#else
void beacon_malloc_limit_arenas(void) {}
void beacon_malloc_release_free(void) {}
#endif
