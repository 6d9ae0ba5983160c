#include "CMalloc.h"

#if defined(__linux__)
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// Where the functions of .text end: crti's _init, in .init, which the linker places after .text and before .fini
// and the PLT. The PLT runs at every call into libc and stays mapped.
extern void _init(void);

// In a section of its own, so that scripts/beacond.order can name it last: in the release link the functions that
// the daemon was seen to run come first in the code, then this one, then everything else.
__attribute__((section(".text.beacon_cold_text_begins"), noinline, used)) void beacon_cold_text_begins(void) {
    __asm__ volatile("");
}

// Drops the whole pages between `start` and `end` from the page tables; returns the KiB released, or -1 when the
// kernel refused. The range must be code that is never written: a private mapping of the unchanged file, so that
// dropping its pages loses nothing and a function that runs again is mapped again from the page cache (or read
// again from the file).
static long beacon_drop_code_pages(uintptr_t start, uintptr_t end) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (start + page - 1) & ~(page - 1);
    uintptr_t to = end & ~(page - 1);
    if (to <= from) {
        return 0;
    }
    if (madvise((void *)from, to - from, MADV_DONTNEED) != 0) {
        return -1;
    }
    // What is read again from the file is read a page at a time, not in blocks of read-ahead.
    (void)madvise((void *)from, to - from, MADV_RANDOM);
    return (long)((to - from) / 1024);
}

int beacon_release_cold_text(void) {
    // From the page after the one that holds the marker, which may hold listed code too.
    return (int)beacon_drop_code_pages((uintptr_t)&beacon_cold_text_begins + 1, (uintptr_t)&_init);
}

struct beacon_library_release {
    const char *name;
    long released;
};

static int beacon_release_library_segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct beacon_library_release *release = data;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, release->name) == NULL) {
        return 0;
    }
    // A library whose code was relocated in place (text relocations) holds private copies of its code pages that
    // dropping would lose: it is left alone.
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type != PT_DYNAMIC) {
            continue;
        }
        for (const ElfW(Dyn) *entry = (const ElfW(Dyn) *)(info->dlpi_addr + header->p_vaddr); entry->d_tag != DT_NULL;
             entry++) {
            if (entry->d_tag == DT_TEXTREL || (entry->d_tag == DT_FLAGS && (entry->d_un.d_val & DF_TEXTREL))) {
                return 1;
            }
        }
    }
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        // Only code that is never written: a writable segment holds private copies that dropping would lose.
        if (header->p_type != PT_LOAD || !(header->p_flags & PF_X) || (header->p_flags & PF_W)) {
            continue;
        }
        // Only the pages that lie wholly inside the segment: a page shared with the next segment may hold data.
        uintptr_t start = info->dlpi_addr + header->p_vaddr;
        long released = beacon_drop_code_pages(start, start + header->p_filesz);
        if (released < 0) {
            release->released = -1;
            return 1;
        }
        release->released += released;
    }
    return 1;
}

int beacon_release_library_code(const char *name) {
    struct beacon_library_release release = {name, 0};
    dl_iterate_phdr(beacon_release_library_segments, &release);
    return (int)release.released;
}
#else
int beacon_release_cold_text(void) {
    return 0;
}

int beacon_release_library_code(const char *name) {
    (void)name;
    return 0;
}
#endif
