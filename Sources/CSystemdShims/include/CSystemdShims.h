#ifndef BEACON_CSYSTEMD_SHIMS_H
#define BEACON_CSYSTEMD_SHIMS_H

#include <stddef.h>
#include <stdint.h>

/// Sends one datagram of `length` bytes to the AF_UNIX datagram socket at `path`.
/// A path starting with '@' names a socket in the abstract namespace.
/// Returns 0 on success, or a negative errno value.
int beacon_unix_datagram_send(const char *path, const void *bytes, size_t length);
/// As beacon_unix_datagram_send, but fails with -EAGAIN instead of waiting when the receiver's queue is full.
int beacon_unix_datagram_try_send(const char *path, const void *bytes, size_t length);

/// Writes the whole buffer to `fd`, retrying on EINTR and partial writes.
/// Returns 0 on success, or a negative errno value.
int beacon_write_all(int fd, const void *bytes, size_t length);

/// CLOCK_MONOTONIC in microseconds, as systemd expects in MONOTONIC_USEC=.
uint64_t beacon_monotonic_usec(void);

/// Blocks `count` signals in the calling thread; threads it starts afterwards inherit the mask.
/// Returns 0 on success, or a negative errno value.
int beacon_block_signals(const int *signals, size_t count);

/// Opens a non-blocking, close-on-exec signalfd for `count` signals (which the process should block).
/// Returns the descriptor, or a negative errno value.
int beacon_signalfd(const int *signals, size_t count);

/// The size of one record read from a signalfd.
size_t beacon_signalfd_record_size(void);

/// The signal number of the record at `record` (`beacon_signalfd_record_size()` bytes).
int beacon_signalfd_record_signal(const void *record);

#endif
