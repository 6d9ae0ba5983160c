#ifndef BEACON_CSYSTEMD_SHIMS_H
#define BEACON_CSYSTEMD_SHIMS_H

#include <stddef.h>
#include <stdint.h>

/// Sends one datagram of `length` bytes to the AF_UNIX datagram socket at `path`.
/// A path starting with '@' names a socket in the abstract namespace.
/// Returns 0 on success, or a negative errno value.
int beacon_unix_datagram_send(const char *path, const void *bytes, size_t length);

/// Writes the whole buffer to `fd`, retrying on EINTR and partial writes.
/// Returns 0 on success, or a negative errno value.
int beacon_write_all(int fd, const void *bytes, size_t length);

/// CLOCK_MONOTONIC in microseconds, as systemd expects in MONOTONIC_USEC=.
uint64_t beacon_monotonic_usec(void);

#endif
