/*
 * peers.h: what every peer benchmark in Benchmarks/Peers shares.
 *
 *   - a monotonic clock in seconds (CLOCK_MONOTONIC is one clock for all processes of the machine, so a
 *     subscriber process and its publisher can compare their timestamps);
 *   - a growable list of latency samples, reported as nearest-rank p50 and p99 in microseconds;
 *   - the one output format run.sh and table.py understand: RESULT|system|test|unit|value;
 *   - blocking read/write loops, CPU pinning, argument parsing;
 *   - a "crew": worker processes forked by a benchmark that say when they are ready and send back one tally
 *     (how many messages they counted, and when the first and the last arrived) over pipes.
 *
 * Everything is static inline (unused helpers cost nothing and draw no warning), so each program is a single gcc
 * invocation with no object files to link.
 */
#ifndef BEACON_PEERS_H
#define BEACON_PEERS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every message body the peers send is this many bytes of 'x'. */
#define PEER_PAYLOAD_BYTES 64
/* Round trips made before the timed ones, so that caches, allocators and the daemons are warm. */
#define PEER_WARMUP 1000

__attribute__((format(printf, 1, 2), noreturn)) static inline void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static inline double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A positive count from the command line; anything else ends the program. */
static inline long parse_count(const char *text, const char *what)
{
	char *end = NULL;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v <= 0)
		fail("%s must be a positive integer, not '%s'", what, text);
	return v;
}

/* One machine-readable figure. The fields must not contain '|'. */
static inline void emit(const char *system, const char *test, const char *unit, double value)
{
	printf("RESULT|%s|%s|%s|%.3f\n", system, test, unit, value);
	fflush(stdout);
}

/* ------------------------------------------------------------------ latency samples */

struct samples {
	double *seconds;
	size_t count;
	size_t capacity;
};

static inline void samples_init(struct samples *s, size_t expected)
{
	s->capacity = expected > 0 ? expected : 1;
	s->count = 0;
	s->seconds = malloc(s->capacity * sizeof *s->seconds);
	if (s->seconds == NULL)
		fail("out of memory for %zu samples", s->capacity);
}

static inline void samples_add(struct samples *s, double seconds)
{
	if (s->count == s->capacity) {
		size_t grown = s->capacity * 2;
		double *p = realloc(s->seconds, grown * sizeof *p);
		if (p == NULL)
			fail("out of memory for %zu samples", grown);
		s->seconds = p;
		s->capacity = grown;
	}
	s->seconds[s->count++] = seconds;
}

static inline void samples_clear(struct samples *s) { s->count = 0; }

static inline void samples_free(struct samples *s)
{
	free(s->seconds);
	s->seconds = NULL;
	s->count = s->capacity = 0;
}

static inline int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * Nearest-rank percentile of sorted values: the value at rank ceil(percent/100 * n), counting from 1.
 * Integer arithmetic, so that the rank does not depend on how 0.99 rounds in binary.
 */
static inline double nearest_rank(const double *sorted, size_t n, unsigned percent)
{
	if (n == 0)
		return 0;
	size_t rank = (percent * n + 99) / 100;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* Prints "<test> p50" and "<test> p99" of the samples in microseconds. Sorts the samples in place. */
static inline void samples_report(struct samples *s, const char *system, const char *test)
{
	static const unsigned wanted[] = {50, 99};
	char name[256];
	qsort(s->seconds, s->count, sizeof *s->seconds, by_value);
	for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
		snprintf(name, sizeof name, "%s p%u", test, wanted[i]);
		emit(system, name, "us", nearest_rank(s->seconds, s->count, wanted[i]) * 1e6);
	}
}

/* ------------------------------------------------------------------ blocking I/O */

/* Writes all of buf; 0 when done, -1 on an error. */
static inline int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Reads exactly len bytes; 0 when done, -1 on an error or end of file before that. */
static inline int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t r = read(fd, p, len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static inline void pin_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		perror("sched_setaffinity");
}

/* ------------------------------------------------------------------ worker crews */

/* What one counting worker saw. Times are mono_now() seconds; first/last are 0 when nothing arrived. */
struct tally {
	uint64_t count;
	double first;
	double last;
	int failed; /* the worker's connection broke or timed out before the end marker */
};

static inline void tally_hit(struct tally *t)
{
	double now = mono_now();
	if (t->count == 0)
		t->first = now;
	t->last = now;
	t->count++;
}

struct crew {
	int ready_pipe[2];  /* workers write one byte each once subscribed */
	int report_pipe[2]; /* workers write one struct tally each at the end */
	pid_t *pids;
	int size;
	int capacity;
};

static inline void crew_init(struct crew *c, int capacity)
{
	if (pipe(c->ready_pipe) != 0 || pipe(c->report_pipe) != 0)
		fail("pipe: %s", strerror(errno));
	c->pids = calloc((size_t)capacity, sizeof *c->pids);
	if (c->pids == NULL)
		fail("out of memory");
	c->size = 0;
	c->capacity = capacity;
}

/* Forks one worker: returns 0 in the worker (which must end with crew_report), 1 in the parent. */
static inline int crew_fork(struct crew *c)
{
	if (c->size == c->capacity)
		fail("crew is full (%d workers)", c->capacity);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		close(c->ready_pipe[0]);
		close(c->report_pipe[0]);
		return 0;
	}
	c->pids[c->size++] = pid;
	return 1;
}

/* In a worker: tell the parent that it is subscribed. */
static inline void crew_ready(struct crew *c)
{
	char byte = 'r';
	if (write_all(c->ready_pipe[1], &byte, 1) != 0)
		_exit(1);
}

/* In a worker: hand the tally to the parent and end the process. */
__attribute__((noreturn)) static inline void crew_report(struct crew *c, const struct tally *t)
{
	int rc = write_all(c->report_pipe[1], t, sizeof *t);
	_exit(rc == 0 ? 0 : 1);
}

/* In the parent, after the last crew_fork: waits until every worker is ready; -1 if one died first or none
 * became ready within timeout_ms of the previous one. */
static inline int crew_wait_ready(struct crew *c, int timeout_ms)
{
	close(c->ready_pipe[1]);
	close(c->report_pipe[1]);
	int waiting = c->size;
	while (waiting > 0) {
		/* A worker that dies before it is ready does not close the pipe (its siblings hold the write end
		 * too), so wait with a deadline instead of blocking in read. */
		struct pollfd p = {.fd = c->ready_pipe[0], .events = POLLIN};
		int r = poll(&p, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		char byte;
		if (r <= 0 || read(c->ready_pipe[0], &byte, 1) != 1)
			return -1;
		waiting--;
	}
	return 0;
}

/*
 * In the parent: collects every worker's tally and reaps the workers. *sum gets the total count, the latest
 * last arrival (never earlier than since) and the number of failed workers; -1 if a worker sent no tally.
 */
static inline int crew_collect(struct crew *c, double since, struct tally *sum)
{
	int rc = 0;
	memset(sum, 0, sizeof *sum);
	sum->last = since;
	for (int i = 0; i < c->size; i++) {
		struct tally t;
		if (read_exact(c->report_pipe[0], &t, sizeof t) != 0) {
			rc = -1;
			break;
		}
		sum->count += t.count;
		if (t.last > sum->last)
			sum->last = t.last;
		sum->failed += t.failed != 0;
	}
	for (int i = 0; i < c->size; i++)
		waitpid(c->pids[i], NULL, 0);
	close(c->ready_pipe[0]);
	close(c->report_pipe[0]);
	free(c->pids);
	c->pids = NULL;
	c->size = 0;
	return rc;
}

/* In the parent, when a benchmark gives up: ends every worker and reaps it. */
static inline void crew_abort(struct crew *c)
{
	for (int i = 0; i < c->size; i++)
		kill(c->pids[i], SIGKILL);
	for (int i = 0; i < c->size; i++)
		waitpid(c->pids[i], NULL, 0);
	c->size = 0;
}

/* Ends a helper process started by a benchmark (a service, an echo peer) and reaps it. */
static inline void stop_child(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

#endif
