#!/bin/bash
# Benchmarks/Peers/run.sh: measures, on this machine and in one run, the systems beacond is compared with: a bare
# Unix socket, D-Bus through dbus-daemon and through dbus-broker (and sd-bus with no bus at all), Redis, and the
# cost of starting a command-line client. README.md in this directory describes every figure.
#
#   Benchmarks/Peers/run.sh                          # REPS=7
#   REPS=3 Benchmarks/Peers/run.sh
#   KEEP=1 Benchmarks/Peers/run.sh                   # keep the work dir: binaries, raw results, daemon logs
#   RESULTS=/tmp/peers.txt Benchmarks/Peers/run.sh   # also write the raw RESULT lines to that file
#
# Steps: build the C peers into a fresh work dir /tmp/beacon-peers.XXXXXX; start a private dbus-daemon, dbus-broker
# (dbus-broker-ns.sh) and redis-server, each listening on a Unix socket in the work dir and nothing on TCP; run
# every measurement REPS times, a whole round over all systems per repetition so that load from other work falls
# on all of them alike; stop the daemons; print the table of medians (table.py).
#
# What a caller can rely on (scripts/bus-bench.sh does): standard output is a header of lines starting with '#'
# (host, versions, load, notes about failed benchmarks), an empty line and the table; with RESULTS=FILE the raw
# RESULT|system|test|unit|value lines of the whole run are written to FILE (also when the run stops early); with
# KEEP=1 the last line is "work dir kept: DIR" and DIR/results.txt holds the same lines. The exit status is
# non-zero when the build or a daemon failed; a single benchmark that fails is reported on standard error and in
# the header, and its rows are missing from the table. Progress goes to standard error.
#
# Needs root (dbus-broker runs in a private mount namespace) and the Debian packages gcc pkg-config
# libsystemd-dev libhiredis-dev dbus-daemon dbus-broker redis-server redis-tools systemd (busctl,
# systemd-socket-activate) util-linux (unshare, taskset).
set -u -o pipefail

PEERS=$(cd "$(dirname "$0")" && pwd)
REPS=${REPS:-7}
KEEP=${KEEP:-0}
RESULTS=${RESULTS:-}
LAST_CPU=$(($(nproc) - 1))
WORK=$(mktemp -d /tmp/beacon-peers.XXXXXX)
BIN=$WORK/bin
RAW=$WORK/results.txt
ERRORS=$WORK/errors.log
mkdir -p "$BIN"
: >"$RAW"
: >"$ERRORS"

forget_pids() {
	DD_PID='' LAUNCHER_PID='' BROKER_PID='' SINK_PID='' REDIS_PID=''
	SERVE_PIDS=()
}
forget_pids

stop_all() {
	local pid
	for pid in "${SERVE_PIDS[@]}" $DD_PID $BROKER_PID $LAUNCHER_PID $SINK_PID $REDIS_PID; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${SERVE_PIDS[@]}" $DD_PID $LAUNCHER_PID $REDIS_PID; do
		wait "$pid" 2>/dev/null
	done
	forget_pids
}
finish() {
	stop_all
	if [ -n "$RESULTS" ]; then
		cp "$RAW" "$RESULTS" || echo "run.sh: could not write $RESULTS" >&2
	fi
	if [ "$KEEP" = 1 ]; then
		echo "work dir kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap finish EXIT
trap 'exit 130' INT TERM
die() {
	echo "run.sh: $*" >&2
	exit 1
}

# ------------------------------------------------------------------------------------------- build

for tool in gcc pkg-config dbus-daemon dbus-broker dbus-broker-launch systemd-socket-activate busctl \
	redis-server redis-cli unshare taskset; do
	command -v "$tool" >/dev/null || die "$tool is missing (the Debian packages are listed at the top of $0)"
done
[ "$(id -u)" = 0 ] || die "needs root: dbus-broker is started in a private mount namespace"
pkg-config --exists libsystemd || die "libsystemd-dev is missing"
pkg-config --exists hiredis || die "libhiredis-dev is missing"

CFLAGS=(-std=c11 -O2 -Wall -Wextra)
build() { # NAME [LIBRARY...]: NAME.c into $BIN/NAME
	local name=$1 flags=()
	shift
	if [ $# -gt 0 ]; then
		read -r -a flags <<<"$(pkg-config --cflags --libs "$@")"
	fi
	gcc "${CFLAGS[@]}" -o "$BIN/$name" "$PEERS/$name.c" "${flags[@]}" >>"$WORK/build.log" 2>&1 ||
		die "building $name failed: $(tail -20 "$WORK/build.log")"
}
build unix_peer
build cli_timer
build dbus_peer libsystemd
build redis_peer hiredis

# shellcheck source=/dev/null
os_name=$(. /etc/os-release && echo "$PRETTY_NAME")
echo "# host: $(uname -r), $((LAST_CPU + 1)) CPUs, $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)," \
	"$os_name"
echo "# versions: $(dbus-daemon --version | head -1); $(dbus-broker --version | head -1);" \
	"libsystemd $(pkg-config --modversion libsystemd); $(redis-server --version | cut -d' ' -f1-3);" \
	"hiredis $(pkg-config --modversion hiredis)"
echo "# loadavg before: $(cut -d' ' -f1-3 /proc/loadavg); reps=$REPS; work dir $WORK"

# ------------------------------------------------------------------------------------------- daemons

bus_answers() { # ADDRESS: true once the bus daemon answers a call
	local _
	for _ in $(seq 100); do
		busctl --address="$1" call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetId \
			>/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

# dbus-daemon in the foreground (--nofork), so that its pid is $!.
DD_ADDR=unix:path=$WORK/dbus-daemon.sock
dbus-daemon --config-file="$PEERS/bus-policy.conf" --address="$DD_ADDR" --nofork --nopidfile \
	>"$WORK/dbus-daemon.log" 2>&1 &
DD_PID=$!
bus_answers "$DD_ADDR" || die "dbus-daemon does not answer: $(cat "$WORK/dbus-daemon.log")"

# dbus-broker: $! becomes dbus-broker-launch (every step of dbus-broker-ns.sh execs the next); the broker itself
# is the launcher's child, started by the first connection.
BR_ADDR=unix:path=$WORK/dbus-broker.sock
sh "$PEERS/dbus-broker-ns.sh" "$WORK/dbus-broker.sock" "$PEERS/bus-policy.conf" "$BIN/unix_peer" \
	"$WORK/dbus-broker.journal" "$WORK/journal-sink.pid" >"$WORK/dbus-broker.log" 2>&1 &
LAUNCHER_PID=$!
bus_answers "$BR_ADDR" || die "dbus-broker does not answer: $(cat "$WORK/dbus-broker.log")"
SINK_PID=$(cat "$WORK/journal-sink.pid" 2>/dev/null)
BROKER_PID=$(pgrep -P "$LAUNCHER_PID" -x dbus-broker) || die "no dbus-broker under the launcher $LAUNCHER_PID"

# redis: Unix socket only (port 0: no TCP listener), nothing persisted.
RD_SOCK=$WORK/redis.sock
redis-server --port 0 --unixsocket "$RD_SOCK" --unixsocketperm 700 --save '' --appendonly no --dir "$WORK" \
	--logfile "$WORK/redis.log" --daemonize no &
REDIS_PID=$!
for _ in $(seq 100); do
	redis-cli -s "$RD_SOCK" ping >/dev/null 2>&1 && break
	sleep 0.05
done
redis-cli -s "$RD_SOCK" ping >/dev/null 2>&1 || die "redis-server does not answer: $(tail -5 "$WORK/redis.log")"

# Resident memory right after start: idle, one client (the readiness check) served and gone.
rss_kib() { # PID...: summed VmRSS
	local pid sum=0 kib
	for pid in "$@"; do
		kib=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
		sum=$((sum + ${kib:-0}))
	done
	echo "$sum"
}
memory_rows() { # WHEN: the three daemons' RSS rows
	echo "RESULT|dbus-daemon|RSS $1|KiB|$(rss_kib "$DD_PID")"
	echo "RESULT|dbus-broker|RSS $1 (broker + launcher)|KiB|$(rss_kib "$BROKER_PID" "$LAUNCHER_PID")"
	echo "RESULT|redis|RSS $1|KiB|$(rss_kib "$REDIS_PID")"
}
memory_rows "idle after start" >"$WORK/rss-idle.txt"

# One long-running service per bus, for the busctl timings.
CLI_CALL=(org.beacon.PeersCli /org/beacon/Peers org.beacon.Peers)
for bus in dbus-daemon dbus-broker; do
	addr=$DD_ADDR
	[ "$bus" = dbus-broker ] && addr=$BR_ADDR
	"$BIN/dbus_peer" "$bus" "$addr" serve >"$WORK/serve-$bus.log" 2>&1 &
	SERVE_PIDS+=($!)
	for _ in $(seq 100); do
		busctl --address="$addr" call "${CLI_CALL[@]}" Echo s ready >/dev/null 2>&1 && break
		sleep 0.05
	done
	busctl --address="$addr" call "${CLI_CALL[@]}" Echo s ready >/dev/null 2>&1 ||
		die "the busctl service on $bus did not start: $(cat "$WORK/serve-$bus.log")"
done

# ------------------------------------------------------------------------------------------- helpers

# record COMMAND...: runs one benchmark and keeps its RESULT lines.
record() {
	"$@" 2>>"$ERRORS" | grep '^RESULT|' >>"$RAW" || echo "FAILED: $*" | tee -a "$ERRORS" >&2
}
# record_on_cpu0 DAEMON_PID... -- COMMAND...: the same with COMMAND (and what it forks) and every thread of the
# daemons on CPU 0; "[all on cpu0]" is appended to the test names.
record_on_cpu0() {
	local daemons=() pid
	while [ "$1" != -- ]; do
		daemons+=("$1")
		shift
	done
	shift
	for pid in "${daemons[@]}"; do taskset -a -p -c 0 "$pid" >/dev/null; done
	taskset -c 0 "$@" 2>>"$ERRORS" | grep '^RESULT|' | awk -F'|' -v OFS='|' '{ $3 = $3 " [all on cpu0]"; print }' \
		>>"$RAW" || echo "FAILED (on cpu0): $*" | tee -a "$ERRORS" >&2
	for pid in "${daemons[@]}"; do taskset -a -p -c "0-$LAST_CPU" "$pid" >/dev/null; done
}

# bus_round LABEL ADDRESS DAEMON_PID...: the D-Bus measurements through one bus.
bus_round() {
	local label=$1 addr=$2
	shift 2
	record "$BIN/dbus_peer" "$label" "$addr" rtt 20000
	record_on_cpu0 "$@" -- "$BIN/dbus_peer" "$label" "$addr" rtt 20000
	record "$BIN/dbus_peer" "$label" "$addr" signals 1 100000
	record "$BIN/dbus_peer" "$label" "$addr" signals 10 20000
	record "$BIN/dbus_peer" "$label" "$addr" propwatch 10000
	record "$BIN/cli_timer" "$label" "busctl call Echo (CLI wall time)" 50 \
		busctl --address="$addr" call "${CLI_CALL[@]}" Echo s hello
	record "$BIN/cli_timer" "$label" "busctl get-property (CLI wall time)" 50 \
		busctl --address="$addr" get-property "${CLI_CALL[@]}" Value
}

# ------------------------------------------------------------------------------------------- measurements

for rep in $(seq "$REPS"); do
	echo "# repetition $rep/$REPS ($(date +%T), loadavg $(cut -d' ' -f1 /proc/loadavg))" >&2
	echo "RESULT|host|1-min loadavg at start of repetition|load|$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"

	# A bare Unix stream socket between two processes.
	record "$BIN/unix_peer" rtt 50000
	record_on_cpu0 -- "$BIN/unix_peer" rtt 50000
	record "$BIN/unix_peer" rtt 50000 split
	record "$BIN/unix_peer" tput 5000000 64
	record "$BIN/unix_peer" fanout 1000000 64 10

	# D-Bus: sd-bus with no bus in between, then through each bus.
	record "$BIN/dbus_peer" "sd-bus p2p (no broker)" - p2p 20000
	record_on_cpu0 -- "$BIN/dbus_peer" "sd-bus p2p (no broker)" - p2p 20000
	bus_round dbus-daemon "$DD_ADDR" "$DD_PID"
	bus_round dbus-broker "$BR_ADDR" "$LAUNCHER_PID" "$BROKER_PID"

	# Redis: round trip, pub/sub, keyspace notifications, its CLI.
	record "$BIN/redis_peer" "$RD_SOCK" ping 20000
	record_on_cpu0 "$REDIS_PID" -- "$BIN/redis_peer" "$RD_SOCK" ping 20000
	record "$BIN/redis_peer" "$RD_SOCK" pubsub 1 1000000 1000
	record "$BIN/redis_peer" "$RD_SOCK" pubsub 10 200000 1000
	record "$BIN/redis_peer" "$RD_SOCK" keyspace 1 1000000 1000
	record "$BIN/redis_peer" "$RD_SOCK" keyspace 10 200000 1000
	record "$BIN/cli_timer" redis "redis-cli PING (CLI wall time)" 50 redis-cli -s "$RD_SOCK" ping

	# What starting any process costs: the floor under every CLI row.
	record "$BIN/cli_timer" baseline "fork+exec /bin/true (CLI wall time)" 50 /bin/true
done

cat "$WORK/rss-idle.txt" >>"$RAW"
memory_rows "after runs" >>"$RAW"
stop_all

echo "# loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -s "$ERRORS" ]; then
	echo "# stderr of the peer benchmarks (first 20 lines):"
	head -20 "$ERRORS" | sed 's/^/#   /'
fi
echo
/usr/bin/python3 "$PEERS/table.py" "$RAW"
