/*
 * epoll-floor: the least a server written directly on epoll does per varlink call. One thread, level-triggered
 * epoll, one read per readable event, every NUL-terminated frame answered with the same reply (a Get reply of a
 * 64-byte value), written with one write per read. It parses nothing and looks nothing up.
 *
 * usage: epoll-floor SOCKET_PATH   (serves until killed)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

static char reply[256];
static size_t reply_len;

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: epoll-floor SOCKET_PATH\n");
		return 2;
	}
	reply_len = (size_t)snprintf(reply, sizeof reply,
		"{\"parameters\":{\"value\":{\"p\":\"%064d\"},\"version\":2,\"persistent\":true}}", 0) + 1;
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[1]);
	unlink(argv[1]);
	int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listener, 128) < 0) {
		perror("epoll-floor: listen");
		return 1;
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = listener};
	epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
	static char in[65536], out[65536];
	for (;;) {
		struct epoll_event events[64];
		int n = epoll_wait(ep, events, 64, -1);
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;
			if (fd == listener) {
				int client = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (client < 0) continue;
				struct epoll_event cev = {.events = EPOLLIN, .data.fd = client};
				epoll_ctl(ep, EPOLL_CTL_ADD, client, &cev);
				continue;
			}
			ssize_t got = read(fd, in, sizeof in);
			if (got <= 0) {
				close(fd);
				continue;
			}
			size_t owed = 0;
			for (char *p = in; (p = memchr(p, 0, (size_t)(in + got - p))) != NULL; p++) owed++;
			size_t used = 0;
			while (owed-- > 0 && used + reply_len <= sizeof out) {
				memcpy(out + used, reply, reply_len);
				used += reply_len;
			}
			if (used > 0 && write(fd, out, used) < 0) close(fd);
		}
	}
}
