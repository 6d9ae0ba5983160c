/*
 * dbus_peer: D-Bus through a message bus (dbus-daemon or dbus-broker), and without one, with sd-bus clients.
 * LABEL is printed as the system of every figure; ADDRESS is a D-Bus address such as unix:path=/tmp/bus.sock.
 *
 *   dbus_peer LABEL ADDRESS rtt N
 *        Forks a service that owns org.beacon.Peers and exports /org/beacon/Peers with the method Echo(s) -> s
 *        and the writable string property Value, whose changes are announced with PropertiesChanged. The
 *        client then makes N synchronous Echo calls with a 64-byte string and N Properties.Get calls of Value
 *        through the bus, each after 1000 untimed ones; p50/p99 round trip in us for both.
 *
 *   dbus_peer LABEL - p2p N
 *        The same two round trips with no bus: client and service speak D-Bus to each other over a socketpair
 *        (the peer-to-peer mode of sd-bus, EXTERNAL authentication). What marshalling and one hop each way
 *        cost, the shape a daemon that serves its clients directly has.
 *
 *   dbus_peer LABEL ADDRESS signals NSUB N
 *        NSUB subscriber processes each add a match rule for the signal Tick on /org/beacon/Peers. Once all
 *        are subscribed, an emitter broadcasts N Tick(t sequence, s 64 bytes) as fast as sd-bus lets it,
 *        flushing whenever more than 4096 messages wait in its write queue, then the signal Done. Figures:
 *        deliveries per second summed over the subscribers (all they received, divided by the time from the
 *        first emission to the last delivery anywhere), the emitter's own rate, and how many never arrived.
 *
 *   dbus_peer LABEL ADDRESS propwatch N
 *        The service of rtt, one watcher process with a match rule for PropertiesChanged of the service's
 *        object, and a client making N synchronous Properties.Set calls of Value (64 bytes, a different value
 *        each time), each of which makes the service emit PropertiesChanged. Figures: the Set round trip
 *        p50/p99, the changes per second read at the watcher (from the first Set to the last change), lost.
 *
 *   dbus_peer LABEL ADDRESS serve
 *        Only the service, in the foreground, under the name org.beacon.PeersCli; prints "ready" once the name
 *        is owned and serves until killed. For timing busctl against a live service.
 */
#include "peers.h"

#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#define SERVICE_NAME "org.beacon.Peers"
#define CLI_SERVICE_NAME "org.beacon.PeersCli"
#define OBJECT_PATH "/org/beacon/Peers"
#define INTERFACE "org.beacon.Peers"
#define PROPERTIES_INTERFACE "org.freedesktop.DBus.Properties"
/* A listener that hears nothing for this long gives up and reports what it has. */
#define LISTENER_IDLE_USEC (20ULL * 1000 * 1000)
/* The emitter flushes once more than this many messages wait in sd-bus's write queue. */
#define EMIT_QUEUE_LIMIT 4096

static const char *label;
static const char *address;
static char payload[PEER_PAYLOAD_BYTES + 1];

static const char *error_text(const sd_bus_error *e, int r)
{
	return e != NULL && sd_bus_error_is_set(e) && e->message != NULL ? e->message : strerror(-r);
}

static sd_bus *connect_to_bus(void)
{
	sd_bus *bus = NULL;
	int r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_address(bus, address);
	if (r >= 0)
		r = sd_bus_set_bus_client(bus, 1);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r < 0)
		fail("%s: connect to %s: %s", label, address, strerror(-r));
	return bus;
}

/* ------------------------------------------------------------------ the service object */

static char stored_value[128] = "initial";

static int on_echo(sd_bus_message *call, void *userdata, sd_bus_error *error)
{
	(void)userdata;
	(void)error;
	const char *text;
	int r = sd_bus_message_read(call, "s", &text);
	if (r < 0)
		return r;
	return sd_bus_reply_method_return(call, "s", text);
}

static int get_value(sd_bus *bus, const char *path, const char *interface, const char *property,
	sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	(void)bus, (void)path, (void)interface, (void)property, (void)userdata, (void)error;
	return sd_bus_message_append(reply, "s", stored_value);
}

static int set_value(sd_bus *bus, const char *path, const char *interface, const char *property,
	sd_bus_message *value, void *userdata, sd_bus_error *error)
{
	(void)path, (void)property, (void)userdata, (void)error;
	const char *text;
	int r = sd_bus_message_read(value, "s", &text);
	if (r < 0)
		return r;
	snprintf(stored_value, sizeof stored_value, "%s", text);
	/* sd-bus does not announce a change by itself: the setter does, with the new value in the signal. */
	r = sd_bus_emit_properties_changed(bus, OBJECT_PATH, interface, "Value", NULL);
	return r < 0 ? r : 0;
}

static const sd_bus_vtable peers_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("Echo", "s", "s", on_echo, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_WRITABLE_PROPERTY("Value", "s", get_value, set_value, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_SIGNAL("Tick", "ts", 0),
	SD_BUS_SIGNAL("Done", "", 0),
	SD_BUS_VTABLE_END,
};

/* Answers calls until the connection goes away; the exit status of a service process. */
static int serve(sd_bus *bus)
{
	for (;;) {
		int r = sd_bus_process(bus, NULL);
		if (r == -ECONNRESET || r == -ENOTCONN)
			return 0;
		if (r < 0)
			return 1;
		if (r > 0)
			continue;
		if (sd_bus_wait(bus, UINT64_MAX) < 0)
			return 1;
	}
}

/* A bus connection that exports the object and owns `name`. */
static sd_bus *service_connection(const char *name)
{
	sd_bus *bus = connect_to_bus();
	int r = sd_bus_add_object_vtable(bus, NULL, OBJECT_PATH, INTERFACE, peers_vtable, NULL);
	if (r >= 0)
		r = sd_bus_request_name(bus, name, 0);
	if (r < 0)
		fail("%s: export the service as %s: %s", label, name, strerror(-r));
	return bus;
}

/* Forks the service process; returns once it owns SERVICE_NAME. */
static pid_t start_service(void)
{
	int ready[2];
	if (pipe(ready) != 0)
		fail("pipe: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		close(ready[0]);
		sd_bus *bus = service_connection(SERVICE_NAME);
		char byte = 'r';
		if (write_all(ready[1], &byte, 1) != 0)
			_exit(1);
		close(ready[1]);
		_exit(serve(bus));
	}
	close(ready[1]);
	char byte;
	if (read_exact(ready[0], &byte, 1) != 0)
		fail("%s: the service did not start", label);
	close(ready[0]);
	return pid;
}

/* ------------------------------------------------------------------ rtt, p2p */

/* Times Echo and Get(Value) round trips; destination is NULL on a peer-to-peer connection. */
static int time_round_trips(sd_bus *bus, const char *destination, long n)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	struct samples lat;
	samples_init(&lat, (size_t)n);

	for (long i = -PEER_WARMUP; i < n; i++) {
		sd_bus_message *reply = NULL;
		const char *echoed = NULL;
		double start = mono_now();
		int r = sd_bus_call_method(bus, destination, OBJECT_PATH, INTERFACE, "Echo", &error, &reply, "s",
			payload);
		double took = mono_now() - start;
		if (r >= 0)
			r = sd_bus_message_read(reply, "s", &echoed);
		if (r < 0 || echoed == NULL || strcmp(echoed, payload) != 0) {
			fprintf(stderr, "%s: Echo failed: %s\n", label, r < 0 ? error_text(&error, r) : "wrong answer");
			return 1;
		}
		sd_bus_message_unref(reply);
		if (i >= 0)
			samples_add(&lat, took);
	}
	samples_report(&lat, label, "method call rtt 64B");

	samples_clear(&lat);
	for (long i = -PEER_WARMUP; i < n; i++) {
		char *value = NULL;
		double start = mono_now();
		int r = sd_bus_get_property_string(bus, destination, OBJECT_PATH, INTERFACE, "Value", &error, &value);
		double took = mono_now() - start;
		if (r < 0) {
			fprintf(stderr, "%s: Get(Value) failed: %s\n", label, error_text(&error, r));
			return 1;
		}
		free(value);
		if (i >= 0)
			samples_add(&lat, took);
	}
	samples_report(&lat, label, "get-property rtt");
	samples_free(&lat);
	sd_bus_error_free(&error);
	return 0;
}

static int run_rtt(long n)
{
	pid_t service = start_service();
	sd_bus *bus = connect_to_bus();
	int rc = time_round_trips(bus, SERVICE_NAME, n);
	sd_bus_flush_close_unref(bus);
	stop_child(service);
	return rc;
}

static int run_p2p(long n)
{
	int ends[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
		fail("socketpair: %s", strerror(errno));
	fflush(stdout);
	pid_t service = fork();
	if (service < 0)
		fail("fork: %s", strerror(errno));
	if (service == 0) {
		sd_bus *bus = NULL;
		sd_id128_t server_id;
		close(ends[0]);
		int r = sd_id128_randomize(&server_id);
		if (r >= 0)
			r = sd_bus_new(&bus);
		if (r >= 0)
			r = sd_bus_set_fd(bus, ends[1], ends[1]);
		if (r >= 0)
			r = sd_bus_set_server(bus, 1, server_id);
		if (r >= 0)
			r = sd_bus_add_object_vtable(bus, NULL, OBJECT_PATH, INTERFACE, peers_vtable, NULL);
		if (r >= 0)
			r = sd_bus_start(bus);
		if (r < 0)
			fail("%s: peer-to-peer service: %s", label, strerror(-r));
		_exit(serve(bus));
	}
	close(ends[1]);
	sd_bus *bus = NULL;
	int r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_fd(bus, ends[0], ends[0]);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r < 0) {
		stop_child(service);
		fail("%s: peer-to-peer client: %s", label, strerror(-r));
	}
	int rc = time_round_trips(bus, NULL, n);
	sd_bus_flush_close_unref(bus);
	stop_child(service);
	return rc;
}

/* ------------------------------------------------------------------ listeners: signals, propwatch */

struct listener {
	struct tally seen;
	int finished; /* Done arrived */
};

static int on_tick(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	(void)error;
	struct listener *l = userdata;
	uint64_t sequence;
	const char *body;
	if (sd_bus_message_read(m, "ts", &sequence, &body) >= 0)
		tally_hit(&l->seen);
	return 0;
}

/* PropertiesChanged(s interface, a{sv} changed, as invalidated): counted when it carries the new Value. */
static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	(void)error;
	struct listener *l = userdata;
	const char *interface, *name, *value;
	if (sd_bus_message_read(m, "s", &interface) < 0)
		return 0;
	if (sd_bus_message_read(m, "a{sv}", 1, &name, "s", &value) < 0)
		return 0;
	if (strcmp(name, "Value") == 0)
		tally_hit(&l->seen);
	return 0;
}

static int on_done(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	(void)m, (void)error;
	((struct listener *)userdata)->finished = 1;
	return 0;
}

static void listen_until_done(sd_bus *bus, struct listener *l)
{
	while (!l->finished) {
		int r = sd_bus_process(bus, NULL);
		if (r < 0) {
			l->seen.failed = 1;
			return;
		}
		if (r > 0)
			continue;
		if (sd_bus_wait(bus, LISTENER_IDLE_USEC) <= 0) {
			l->seen.failed = 1; /* an error, or nothing at all for LISTENER_IDLE_USEC */
			return;
		}
	}
}

/*
 * A crew worker: adds a match for `member` (from `sender`, NULL for anyone) on `interface` of the object, and
 * for Done from anyone, reports ready, then counts until Done.
 */
__attribute__((noreturn)) static void listener_process(struct crew *crew, const char *sender, const char *interface,
	const char *member, sd_bus_message_handler_t handler)
{
	struct listener l = {0};
	sd_bus *bus = connect_to_bus();
	int r = sd_bus_match_signal(bus, NULL, sender, OBJECT_PATH, interface, member, handler, &l);
	if (r >= 0)
		r = sd_bus_match_signal(bus, NULL, NULL, OBJECT_PATH, INTERFACE, "Done", on_done, &l);
	if (r < 0)
		fail("%s: add match: %s", label, strerror(-r));
	crew_ready(crew);
	listen_until_done(bus, &l);
	crew_report(crew, &l.seen);
}

static int run_signals(long subscribers, long n)
{
	struct crew crew;
	crew_init(&crew, (int)subscribers);
	for (long i = 0; i < subscribers; i++)
		if (crew_fork(&crew) == 0)
			listener_process(&crew, NULL, INTERFACE, "Tick", on_tick);
	if (crew_wait_ready(&crew, 10000) != 0) {
		fprintf(stderr, "%s: a subscriber did not get ready\n", label);
		crew_abort(&crew);
		return 1;
	}

	sd_bus *bus = connect_to_bus();
	long queue_full = 0;
	double start = mono_now();
	for (long i = 0; i < n;) {
		int r = sd_bus_emit_signal(bus, OBJECT_PATH, INTERFACE, "Tick", "ts", (uint64_t)i, payload);
		if (r == -ENOBUFS) {
			/* sd-bus's own write queue is full: drain it and send this one again */
			queue_full++;
			sd_bus_flush(bus);
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "%s: emit Tick: %s\n", label, strerror(-r));
			crew_abort(&crew);
			return 1;
		}
		uint64_t queued = 0;
		if (sd_bus_get_n_queued_write(bus, &queued) >= 0 && queued > EMIT_QUEUE_LIMIT)
			sd_bus_flush(bus);
		i++;
	}
	sd_bus_emit_signal(bus, OBJECT_PATH, INTERFACE, "Done", "");
	sd_bus_flush(bus);
	double emitting = mono_now() - start;

	struct tally all;
	int collected = crew_collect(&crew, start, &all);
	sd_bus_flush_close_unref(bus);
	if (collected != 0) {
		fprintf(stderr, "%s: a subscriber sent no count\n", label);
		return 1;
	}
	char test[160];
	snprintf(test, sizeof test, "signal 1->%ld subs, delivered/s (sum at subscribers)", subscribers);
	emit(label, test, "msg/s", (double)all.count / (all.last - start));
	snprintf(test, sizeof test, "signal 1->%ld subs, emit rate (emitter side)", subscribers);
	emit(label, test, "msg/s", (double)n / emitting);
	snprintf(test, sizeof test, "signal 1->%ld subs, lost", subscribers);
	emit(label, test, "msgs", (double)n * (double)subscribers - (double)all.count);
	if (all.failed)
		fprintf(stderr, "%s: %d subscriber(s) stopped on an error or a timeout\n", label, all.failed);
	if (queue_full)
		fprintf(stderr, "%s: the emitter's write queue was full %ld times\n", label, queue_full);
	return 0;
}

static int run_propwatch(long n)
{
	pid_t service = start_service();
	struct crew crew;
	crew_init(&crew, 1);
	if (crew_fork(&crew) == 0)
		listener_process(&crew, SERVICE_NAME, PROPERTIES_INTERFACE, "PropertiesChanged", on_properties_changed);
	if (crew_wait_ready(&crew, 10000) != 0) {
		fprintf(stderr, "%s: the watcher did not get ready\n", label);
		crew_abort(&crew);
		stop_child(service);
		return 1;
	}

	sd_bus *bus = connect_to_bus();
	sd_bus_error error = SD_BUS_ERROR_NULL;
	struct samples lat;
	samples_init(&lat, (size_t)n);
	double start = mono_now();
	for (long i = 0; i < n; i++) {
		char value[PEER_PAYLOAD_BYTES + 16];
		/* 48 bytes of payload, a dash, a 15-digit sequence number: 64 bytes, never the same twice (the
		 * buffer has room for the 19 digits a long can have, which gcc cannot rule out) */
		snprintf(value, sizeof value, "%.48s-%015ld", payload, i);
		double t0 = mono_now();
		int r = sd_bus_set_property(bus, SERVICE_NAME, OBJECT_PATH, INTERFACE, "Value", &error, "s", value);
		double took = mono_now() - t0;
		if (r < 0) {
			fprintf(stderr, "%s: Set(Value) failed: %s\n", label, error_text(&error, r));
			crew_abort(&crew);
			stop_child(service);
			return 1;
		}
		samples_add(&lat, took);
	}
	sd_bus_emit_signal(bus, OBJECT_PATH, INTERFACE, "Done", "");
	sd_bus_flush(bus);

	struct tally watcher;
	int collected = crew_collect(&crew, start, &watcher);
	sd_bus_error_free(&error);
	sd_bus_flush_close_unref(bus);
	stop_child(service);
	if (collected != 0) {
		fprintf(stderr, "%s: the watcher sent no count\n", label);
		return 1;
	}
	samples_report(&lat, label, "set-property rtt (emits PropertiesChanged)");
	samples_free(&lat);
	emit(label, "PropertiesChanged received/s by 1 watcher", "msg/s", (double)watcher.count / (watcher.last - start));
	emit(label, "PropertiesChanged lost", "msgs", (double)n - (double)watcher.count);
	if (watcher.failed)
		fprintf(stderr, "%s: the watcher stopped on an error or a timeout\n", label);
	return 0;
}

static int run_serve(void)
{
	sd_bus *bus = service_connection(CLI_SERVICE_NAME);
	printf("ready\n");
	fflush(stdout);
	return serve(bus);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	memset(payload, 'x', PEER_PAYLOAD_BYTES);
	payload[PEER_PAYLOAD_BYTES] = '\0';
	if (argc >= 4) {
		label = argv[1];
		address = argv[2];
		const char *mode = argv[3];
		if (!strcmp(mode, "rtt") && argc == 5)
			return run_rtt(parse_count(argv[4], "N"));
		if (!strcmp(mode, "p2p") && argc == 5)
			return run_p2p(parse_count(argv[4], "N"));
		if (!strcmp(mode, "signals") && argc == 6)
			return run_signals(parse_count(argv[4], "NSUB"), parse_count(argv[5], "N"));
		if (!strcmp(mode, "propwatch") && argc == 5)
			return run_propwatch(parse_count(argv[4], "N"));
		if (!strcmp(mode, "serve") && argc == 4)
			return run_serve();
	}
	fprintf(stderr,
		"usage: dbus_peer LABEL ADDRESS rtt N\n"
		"       dbus_peer LABEL -       p2p N\n"
		"       dbus_peer LABEL ADDRESS signals NSUB N\n"
		"       dbus_peer LABEL ADDRESS propwatch N\n"
		"       dbus_peer LABEL ADDRESS serve\n");
	return 2;
}
