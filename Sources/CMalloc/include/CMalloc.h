#ifndef BEACON_CMALLOC_H
#define BEACON_CMALLOC_H

/// Returns the allocator's free memory to the system (glibc's malloc_trim); does nothing elsewhere.
void beacon_malloc_release_free(void);

#endif
