/* Preloaded into beacond under valgrind: valgrind 3.19 writes to the signal mask passed to rt_sigsuspend, which
 * the daemon's runtime passes from read-only memory. The wrapper hands the real call a writable copy. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

int sigsuspend(const sigset_t *mask) {
    static int (*real)(const sigset_t *);
    if (!real) real = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    sigset_t copy = *mask;
    return real(&copy);
}
