/*
 * redis_peer: Redis over its Unix socket, through hiredis, the way a C client uses it.
 *
 *   redis_peer SOCKET ping N
 *        N synchronous PINGs after 1000 untimed ones; p50/p99 round trip in us.
 *
 *   redis_peer SOCKET pubsub NSUB N WINDOW
 *        NSUB subscriber processes, each on its own connection, SUBSCRIBE to one channel. Once all are
 *        subscribed, one publisher sends N PUBLISHes of a 64-byte message, WINDOW at a time: it queues WINDOW
 *        commands, then reads their WINDOW replies. A 4-byte "DONE" message on the channel ends the test.
 *        Figures: messages delivered per second summed over the subscribers (all they received, divided by
 *        the time from the first PUBLISH to the last delivery anywhere), the publisher's own rate, and how
 *        many deliveries never arrived.
 *
 *   redis_peer SOCKET keyspace NSUB N WINDOW
 *        Redis as an observable key-value store: with notify-keyspace-events set to K$ for the test, the
 *        subscribers SUBSCRIBE to the key's keyspace channel and the writer sends N SETs of a 64-byte value,
 *        WINDOW at a time. Each notification names the event ("set") but carries no value. A message on a
 *        second channel ends the test. Same three figures.
 */
#include "peers.h"

#include <hiredis/hiredis.h>

#define SYSTEM "redis"
#define CHANNEL "beacon.peers"
#define KEY "beacon.peers.key"
#define KEYSPACE_CHANNEL "__keyspace@0__:" KEY
#define END_CHANNEL "beacon.peers.end"
#define END_MESSAGE "DONE"
/* A subscriber that hears nothing for this long gives up and reports what it has. */
#define SUBSCRIBER_IDLE_SECONDS 20

static const char *socket_path;
static char payload[PEER_PAYLOAD_BYTES];

static redisContext *open_redis(void)
{
	redisContext *c = redisConnectUnix(socket_path);
	if (c == NULL || c->err)
		fail("redis_peer: connect to %s: %s", socket_path, c ? c->errstr : "out of memory");
	return c;
}

/* Sends one command and checks the type of its reply; 0 on success. */
static int command_ok(redisContext *c, int expected_type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	int ok = r != NULL && (int)r->type == expected_type;
	if (!ok)
		fprintf(stderr, "redis_peer: '%s' failed: %s\n", fmt,
			r == NULL ? c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	if (r != NULL)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ ping */

static int run_ping(long n)
{
	redisContext *c = open_redis();
	struct samples lat;
	samples_init(&lat, (size_t)n);
	for (long i = -PEER_WARMUP; i < n; i++) {
		double start = mono_now();
		redisReply *r = redisCommand(c, "PING");
		double took = mono_now() - start;
		if (r == NULL || r->type != REDIS_REPLY_STATUS) {
			fprintf(stderr, "redis_peer: PING failed: %s\n", r == NULL ? c->errstr : "unexpected reply");
			return 1;
		}
		freeReplyObject(r);
		if (i >= 0)
			samples_add(&lat, took);
	}
	samples_report(&lat, SYSTEM, "PING rtt");
	samples_free(&lat);
	redisFree(c);
	return 0;
}

/* ------------------------------------------------------------------ pubsub, keyspace */

struct fanout_kind {
	const char *label;   /* how the test names start */
	const char *channel; /* what the subscribers count */
	int end_on_channel;  /* 1: END_MESSAGE on the counted channel ends; 0: any message on END_CHANNEL does */
	int keyspace;        /* 1: SET the key (notifications on); 0: PUBLISH to the channel */
};

static const struct fanout_kind PUBSUB = {"PUBLISH", CHANNEL, 1, 0};
static const struct fanout_kind KEYSPACE = {"keyspace notify (SET)", KEYSPACE_CHANNEL, 0, 1};

/* Does a pushed ["message", channel, body] reply end the test? */
static int is_end(const struct fanout_kind *k, const redisReply *msg)
{
	const redisReply *channel = msg->element[1], *body = msg->element[2];
	if (k->end_on_channel)
		return body->len == sizeof END_MESSAGE - 1 && !memcmp(body->str, END_MESSAGE, body->len);
	return channel->len == sizeof END_CHANNEL - 1 && !memcmp(channel->str, END_CHANNEL, channel->len);
}

__attribute__((noreturn)) static void subscriber(struct crew *crew, const struct fanout_kind *k)
{
	struct tally seen = {0};
	redisContext *c = open_redis();
	int channels = 1;
	redisAppendCommand(c, "SUBSCRIBE %s", k->channel);
	if (!k->end_on_channel) {
		redisAppendCommand(c, "SUBSCRIBE %s", END_CHANNEL);
		channels++;
	}
	for (int i = 0; i < channels; i++) {
		redisReply *r;
		if (redisGetReply(c, (void **)&r) != REDIS_OK)
			fail("redis_peer: SUBSCRIBE failed: %s", c->errstr);
		freeReplyObject(r);
	}
	struct timeval idle = {.tv_sec = SUBSCRIBER_IDLE_SECONDS, .tv_usec = 0};
	redisSetTimeout(c, idle);
	crew_ready(crew);
	for (;;) {
		redisReply *r;
		if (redisGetReply(c, (void **)&r) != REDIS_OK) {
			seen.failed = 1;
			break;
		}
		int end = 0;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3) {
			end = is_end(k, r);
			if (!end)
				tally_hit(&seen);
		}
		freeReplyObject(r);
		if (end)
			break;
	}
	redisFree(c);
	crew_report(crew, &seen);
}

static int run_fanout(const struct fanout_kind *k, long subscribers, long n, long window)
{
	struct crew crew;
	crew_init(&crew, (int)subscribers);
	for (long i = 0; i < subscribers; i++)
		if (crew_fork(&crew) == 0)
			subscriber(&crew, k);
	if (crew_wait_ready(&crew, 10000) != 0) {
		fprintf(stderr, "redis_peer: a subscriber did not get ready\n");
		crew_abort(&crew);
		return 1;
	}

	redisContext *pub = open_redis();
	if (k->keyspace && command_ok(pub, REDIS_REPLY_STATUS, "CONFIG SET notify-keyspace-events K$") != 0) {
		crew_abort(&crew);
		return 1;
	}

	long short_counts = 0;
	double start = mono_now();
	for (long sent = 0; sent < n;) {
		long now = n - sent < window ? n - sent : window;
		for (long i = 0; i < now; i++) {
			if (k->keyspace)
				redisAppendCommand(pub, "SET %s %b", KEY, payload, sizeof payload);
			else
				redisAppendCommand(pub, "PUBLISH %s %b", k->channel, payload, sizeof payload);
		}
		for (long i = 0; i < now; i++) {
			redisReply *r;
			if (redisGetReply(pub, (void **)&r) != REDIS_OK) {
				fprintf(stderr, "redis_peer: publisher: %s\n", pub->errstr);
				crew_abort(&crew);
				return 1;
			}
			/* PUBLISH answers with the number of subscribers that got the message. */
			if (!k->keyspace && (r->type != REDIS_REPLY_INTEGER || r->integer != subscribers))
				short_counts++;
			freeReplyObject(r);
		}
		sent += now;
	}
	double publishing = mono_now() - start;
	if (k->end_on_channel)
		command_ok(pub, REDIS_REPLY_INTEGER, "PUBLISH %s %s", k->channel, END_MESSAGE);
	else
		command_ok(pub, REDIS_REPLY_INTEGER, "PUBLISH %s %s", END_CHANNEL, END_MESSAGE);

	struct tally all;
	int collected = crew_collect(&crew, start, &all);
	if (k->keyspace)
		command_ok(pub, REDIS_REPLY_STATUS, "CONFIG SET notify-keyspace-events %s", "");
	redisFree(pub);
	if (collected != 0) {
		fprintf(stderr, "redis_peer: a subscriber sent no count\n");
		return 1;
	}

	char test[200];
	snprintf(test, sizeof test, "%s 1->%ld subs, delivered/s (sum at subscribers), pipeline %ld", k->label,
		subscribers, window);
	emit(SYSTEM, test, "msg/s", (double)all.count / (all.last - start));
	snprintf(test, sizeof test, "%s 1->%ld subs, publisher rate, pipeline %ld", k->label, subscribers, window);
	emit(SYSTEM, test, "msg/s", (double)n / publishing);
	snprintf(test, sizeof test, "%s 1->%ld subs, lost", k->label, subscribers);
	emit(SYSTEM, test, "msgs", (double)n * (double)subscribers - (double)all.count);
	if (short_counts)
		fprintf(stderr, "redis_peer: %ld PUBLISHes reached fewer than %ld subscribers\n", short_counts,
			subscribers);
	if (all.failed)
		fprintf(stderr, "redis_peer: %d subscriber(s) lost the connection or timed out\n", all.failed);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	memset(payload, 'x', sizeof payload);
	if (argc >= 3) {
		socket_path = argv[1];
		const char *mode = argv[2];
		if (!strcmp(mode, "ping") && argc == 4)
			return run_ping(parse_count(argv[3], "N"));
		if ((!strcmp(mode, "pubsub") || !strcmp(mode, "keyspace")) && argc == 6)
			return run_fanout(!strcmp(mode, "pubsub") ? &PUBSUB : &KEYSPACE, parse_count(argv[3], "NSUB"),
				parse_count(argv[4], "N"), parse_count(argv[5], "WINDOW"));
	}
	fprintf(stderr,
		"usage: redis_peer SOCKET ping N\n"
		"       redis_peer SOCKET pubsub NSUB N WINDOW\n"
		"       redis_peer SOCKET keyspace NSUB N WINDOW\n");
	return 2;
}
