#ifndef BEACON_CEPOLL_H
#define BEACON_CEPOLL_H

// epoll and eventfd, which Glibc's Swift module leaves out.
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/// Names the calling thread (at most 15 bytes are kept).
void beacon_epoll_name_thread(const char *name);

// read(2), send(2), sendmsg(2) and epoll_wait(2) as plain system calls. glibc's own wrappers are cancellation
// points: in a process with more than one thread, each enables and disables asynchronous cancellation around the
// call, about 90 instructions of a Get's round trip. Nothing that uses these cancels a thread. Each returns what
// the system call returns, or -1 with errno set.

static inline ssize_t beacon_read(int descriptor, void *buffer, size_t count) {
    return syscall(SYS_read, descriptor, buffer, count);
}

static inline ssize_t beacon_send(int descriptor, const void *buffer, size_t count, int flags) {
    return syscall(SYS_sendto, descriptor, buffer, count, flags, NULL, 0);
}

static inline ssize_t beacon_sendmsg(int descriptor, const struct msghdr *message, int flags) {
    return syscall(SYS_sendmsg, descriptor, message, flags);
}

/// accept4(2) of a connection that is non-blocking and closed on exec, in one system call (Glibc's Swift module
/// leaves accept4 out).
int beacon_accept_nonblocking(int descriptor);

// epoll_pwait without a signal mask is epoll_wait, and exists on every architecture (arm64 has no epoll_wait).
static inline int beacon_epoll_wait(int epoll, struct epoll_event *events, int capacity, int timeout) {
    return (int)syscall(SYS_epoll_pwait, epoll, events, capacity, timeout, NULL, 0);
}

#endif
