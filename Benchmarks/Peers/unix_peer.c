/*
 * unix_peer: what a bare AF_UNIX stream socket between two processes delivers on this machine, with no daemon in
 * between; the floor under every bus measured beside it. It also hosts the datagram sink that stands in for
 * journald when dbus-broker is started without systemd (dbus-broker-ns.sh).
 *
 *   unix_peer rtt N [split]     ping-pong of a 64-byte message with an echo process, N timed round trips after
 *                               1000 untimed ones; p50/p99 in us. "split" pins this process to CPU 0 and the
 *                               echo process to CPU 1, so that every hop is a cross-CPU wake-up.
 *   unix_peer tput N BATCH      one reader process; N frames (a 4-byte length, then 64 bytes), BATCH frames per
 *                               write(); the reader walks every frame and answers one byte after the last. msg/s.
 *   unix_peer fanout N BATCH K  the same to K reader processes over K sockets, each batch written to every
 *                               socket in turn: what broadcasting 1->K costs with no broker. Total msg/s delivered.
 *   unix_peer sink PATH LOG     binds a datagram socket at PATH and appends every datagram received to LOG; runs
 *                               until killed.
 *
 * The stream sockets are reached by name (bind, listen, connect, accept in /tmp) as a client reaches a daemon;
 * the name is removed as soon as the pair is connected.
 */
#include "peers.h"

#include <sys/socket.h>
#include <sys/un.h>

#define SYSTEM "unix-socket"
#define FRAME_BYTES (4 + PEER_PAYLOAD_BYTES)
/* How much a reader asks for per read(): a quarter MiB, the most the writer's batches fill. */
#define READ_CHUNK (256 * 1024)

static void set_path(struct sockaddr_un *addr, const char *path)
{
	size_t len = strlen(path);
	memset(addr, 0, sizeof *addr);
	addr->sun_family = AF_UNIX;
	if (len >= sizeof addr->sun_path)
		fail("socket path too long: %s", path);
	memcpy(addr->sun_path, path, len + 1);
}

/* Two connected stream sockets, made through a named listening socket that is gone again on return. */
static void connected_pair(int *accepted, int *connected)
{
	static unsigned serial;
	char path[64];
	struct sockaddr_un addr;
	snprintf(path, sizeof path, "/tmp/beacon-unix-peer.%ld.%u", (long)getpid(), serial++);
	set_path(&addr, path);
	unlink(path);
	int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 8) != 0)
		fail("listen on %s: %s", path, strerror(errno));
	*connected = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*connected < 0 || connect(*connected, (struct sockaddr *)&addr, sizeof addr) != 0)
		fail("connect to %s: %s", path, strerror(errno));
	*accepted = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (*accepted < 0)
		fail("accept on %s: %s", path, strerror(errno));
	close(listener);
	unlink(path);
}

/* ------------------------------------------------------------------ rtt */

static int run_rtt(long n, int split)
{
	int mine, theirs;
	connected_pair(&theirs, &mine);
	fflush(stdout);
	pid_t echo = fork();
	if (echo < 0)
		fail("fork: %s", strerror(errno));
	if (echo == 0) {
		char buf[PEER_PAYLOAD_BYTES];
		close(mine);
		if (split)
			pin_to_cpu(1);
		while (read_exact(theirs, buf, sizeof buf) == 0)
			if (write_all(theirs, buf, sizeof buf) != 0)
				_exit(1);
		_exit(0); /* the other end closed: done */
	}
	close(theirs);
	if (split)
		pin_to_cpu(0);

	char msg[PEER_PAYLOAD_BYTES];
	memset(msg, 'x', sizeof msg);
	struct samples lat;
	samples_init(&lat, (size_t)n);
	for (long i = -PEER_WARMUP; i < n; i++) {
		double start = mono_now();
		if (write_all(mine, msg, sizeof msg) != 0 || read_exact(mine, msg, sizeof msg) != 0) {
			fprintf(stderr, "unix_peer rtt: the echo process stopped answering: %s\n", strerror(errno));
			stop_child(echo);
			return 1;
		}
		double took = mono_now() - start;
		if (i >= 0)
			samples_add(&lat, took);
	}
	close(mine);
	waitpid(echo, NULL, 0);
	samples_report(&lat, SYSTEM, split ? "rtt 64B [client cpu0, echo cpu1]" : "rtt 64B");
	samples_free(&lat);
	return 0;
}

/* ------------------------------------------------------------------ tput, fanout */

/* A reader process: walks frames until it has seen `expected`, then writes one byte back and ends. */
__attribute__((noreturn)) static void count_frames(int fd, long expected)
{
	char *buf = malloc(READ_CHUNK);
	size_t filled = 0;
	long seen = 0;
	if (buf == NULL)
		_exit(1);
	while (seen < expected) {
		ssize_t got = read(fd, buf + filled, READ_CHUNK - filled);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			fprintf(stderr, "unix_peer: stream ended after %ld of %ld frames\n", seen, expected);
			_exit(1);
		}
		filled += (size_t)got;
		size_t at = 0;
		while (filled - at >= 4) {
			uint32_t len;
			memcpy(&len, buf + at, sizeof len);
			if (filled - at - 4 < len)
				break; /* the rest of this frame is still in flight */
			/* Look at the body, as a consumer would, instead of skipping it unread. */
			if (len == 0 || buf[at + 4] != 'x') {
				fprintf(stderr, "unix_peer: malformed frame after %ld frames\n", seen);
				_exit(1);
			}
			at += 4 + len;
			seen++;
		}
		memmove(buf, buf + at, filled - at);
		filled -= at;
	}
	char done = 'd';
	_exit(write_all(fd, &done, 1) == 0 ? 0 : 1);
}

static int run_stream(long n, long batch, long readers, int fanout)
{
	int *out = calloc((size_t)readers, sizeof *out);
	pid_t *pids = calloc((size_t)readers, sizeof *pids);
	char *frames = malloc((size_t)batch * FRAME_BYTES);
	if (out == NULL || pids == NULL || frames == NULL)
		fail("out of memory");
	for (long r = 0; r < readers; r++) {
		int in;
		connected_pair(&out[r], &in);
		fflush(stdout);
		pids[r] = fork();
		if (pids[r] < 0)
			fail("fork: %s", strerror(errno));
		if (pids[r] == 0) {
			for (long j = 0; j <= r; j++)
				close(out[j]);
			count_frames(in, n);
		}
		close(in);
	}

	const uint32_t body = PEER_PAYLOAD_BYTES;
	for (long f = 0; f < batch; f++) {
		memcpy(frames + f * FRAME_BYTES, &body, sizeof body);
		memset(frames + f * FRAME_BYTES + 4, 'x', PEER_PAYLOAD_BYTES);
	}

	int rc = 0;
	double start = mono_now();
	for (long sent = 0; sent < n && rc == 0;) {
		long now = n - sent < batch ? n - sent : batch;
		for (long r = 0; r < readers; r++)
			if (write_all(out[r], frames, (size_t)now * FRAME_BYTES) != 0) {
				fprintf(stderr, "unix_peer: write: %s\n", strerror(errno));
				rc = 1;
				break;
			}
		sent += now;
	}
	for (long r = 0; r < readers && rc == 0; r++) {
		char done;
		if (read_exact(out[r], &done, 1) != 0) {
			fprintf(stderr, "unix_peer: reader %ld did not confirm\n", r);
			rc = 1;
		}
	}
	double elapsed = mono_now() - start;

	for (long r = 0; r < readers; r++)
		close(out[r]);
	for (long r = 0; r < readers; r++)
		waitpid(pids[r], NULL, 0);
	if (rc == 0) {
		char test[160];
		if (fanout) {
			snprintf(test, sizeof test, "fan-out 1->%ld 64B msgs, %ld/write (total delivered)", readers, batch);
			emit(SYSTEM, test, "msg/s", (double)n * (double)readers / elapsed);
		} else {
			snprintf(test, sizeof test, "one-way 64B msgs, %ld/write", batch);
			emit(SYSTEM, test, "msg/s", (double)n / elapsed);
		}
	}
	free(frames);
	free(pids);
	free(out);
	return rc;
}

/* ------------------------------------------------------------------ sink */

static int run_sink(const char *path, const char *log_path)
{
	struct sockaddr_un addr;
	set_path(&addr, path);
	FILE *log = fopen(log_path, "a");
	if (log == NULL)
		fail("open %s: %s", log_path, strerror(errno));
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
		fail("bind %s: %s", path, strerror(errno));
	static char record[256 * 1024];
	for (;;) {
		ssize_t len = recv(fd, record, sizeof record, 0);
		if (len < 0) {
			if (errno == EINTR)
				continue;
			fail("recv on %s: %s", path, strerror(errno));
		}
		/* journald's native records are KEY=VALUE lines; a rule line keeps one record from the next. */
		fwrite(record, 1, (size_t)len, log);
		fputs("\n----\n", log);
		fflush(log);
	}
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "rtt") && (argc == 3 || (argc == 4 && !strcmp(argv[3], "split"))))
		return run_rtt(parse_count(argv[2], "N"), argc == 4);
	if (!strcmp(mode, "tput") && argc == 4)
		return run_stream(parse_count(argv[2], "N"), parse_count(argv[3], "BATCH"), 1, 0);
	if (!strcmp(mode, "fanout") && argc == 5)
		return run_stream(parse_count(argv[2], "N"), parse_count(argv[3], "BATCH"),
			parse_count(argv[4], "K"), 1);
	if (!strcmp(mode, "sink") && argc == 4)
		return run_sink(argv[2], argv[3]);
	fprintf(stderr,
		"usage: unix_peer rtt N [split]\n"
		"       unix_peer tput N BATCH\n"
		"       unix_peer fanout N BATCH K\n"
		"       unix_peer sink PATH LOGFILE\n");
	return 2;
}
