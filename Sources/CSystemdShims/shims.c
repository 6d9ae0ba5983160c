#include "CSystemdShims.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int datagram_send(const char *path, const void *bytes, size_t length, int flags) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof(address));
    address.sun_family = AF_UNIX;

    size_t path_length = strlen(path);
    if (path_length == 0 || path_length >= sizeof(address.sun_path)) {
        return -EINVAL;
    }
    memcpy(address.sun_path, path, path_length);
    socklen_t address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_length);
    if (path[0] == '@') {
        address.sun_path[0] = '\0';
    } else {
        address_length += 1;
    }

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    ssize_t sent;
    do {
        sent = sendto(fd, bytes, length, MSG_NOSIGNAL | flags, (const struct sockaddr *)&address, address_length);
    } while (sent < 0 && errno == EINTR);
    int result = sent < 0 ? -errno : 0;
    close(fd);
    return result;
}

int beacon_unix_datagram_send(const char *path, const void *bytes, size_t length) {
    return datagram_send(path, bytes, length, 0);
}

int beacon_unix_datagram_try_send(const char *path, const void *bytes, size_t length) {
    return datagram_send(path, bytes, length, MSG_DONTWAIT);
}

int beacon_write_all(int fd, const void *bytes, size_t length) {
    const char *cursor = bytes;
    while (length > 0) {
        ssize_t written = write(fd, cursor, length);
        if (written < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        cursor += written;
        length -= (size_t)written;
    }
    return 0;
}

uint64_t beacon_monotonic_usec(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

static int beacon_fill_signal_set(sigset_t *set, const int *signals, size_t count) {
    sigemptyset(set);
    for (size_t index = 0; index < count; index++) {
        if (sigaddset(set, signals[index]) != 0) {
            return -errno;
        }
    }
    return 0;
}

int beacon_block_signals(const int *signals, size_t count) {
    sigset_t set;
    int result = beacon_fill_signal_set(&set, signals, count);
    if (result != 0) {
        return result;
    }
    return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int beacon_signalfd(const int *signals, size_t count) {
    sigset_t set;
    int result = beacon_fill_signal_set(&set, signals, count);
    if (result != 0) {
        return result;
    }
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

size_t beacon_signalfd_record_size(void) { return sizeof(struct signalfd_siginfo); }

int beacon_signalfd_record_signal(const void *record) {
    struct signalfd_siginfo info;
    memcpy(&info, record, sizeof(info));
    return (int)info.ssi_signo;
}
