#include "CSystemdShims.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int beacon_unix_datagram_send(const char *path, const void *bytes, size_t length) {
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
        sent = sendto(fd, bytes, length, MSG_NOSIGNAL, (const struct sockaddr *)&address, address_length);
    } while (sent < 0 && errno == EINTR);
    int result = sent < 0 ? -errno : 0;
    close(fd);
    return result;
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
