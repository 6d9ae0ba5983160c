#include "CMalloc.h"

#if defined(__linux__)
#include <stdint.h>
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

int beacon_release_cold_text(void) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)&beacon_cold_text_begins + page) & ~(page - 1);
    uintptr_t to = ((uintptr_t)&_init) & ~(page - 1);
    if (to <= from) {
        return 0;
    }
    // The code is a private mapping of the unchanged file: dropping its pages from the page tables loses nothing,
    // and a function that runs again is mapped again from the page cache (or read again from the file).
    if (madvise((void *)from, to - from, MADV_DONTNEED) != 0) {
        return -1;
    }
    // What is read again from the file is read a page at a time, not in blocks of read-ahead.
    (void)madvise((void *)from, to - from, MADV_RANDOM);
    return (int)((to - from) / 1024);
}
#else
int beacon_release_cold_text(void) {
    return 0;
}
#endif
