#define _GNU_SOURCE
#include <pthread.h>
#include <sys/socket.h>

#include "CEpoll.h"

void beacon_epoll_name_thread(const char *name) {
    char truncated[16];
    int i = 0;
    for (; i < 15 && name[i] != 0; i++) truncated[i] = name[i];
    truncated[i] = 0;
    pthread_setname_np(pthread_self(), truncated);
}

int beacon_accept_nonblocking(int descriptor) {
    return accept4(descriptor, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
