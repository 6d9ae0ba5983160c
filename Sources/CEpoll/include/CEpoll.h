#ifndef BEACON_CEPOLL_H
#define BEACON_CEPOLL_H

// epoll and eventfd, which Glibc's Swift module leaves out.
#include <sys/epoll.h>
#include <sys/eventfd.h>

/// Names the calling thread (at most 15 bytes are kept).
void beacon_epoll_name_thread(const char *name);

#endif
