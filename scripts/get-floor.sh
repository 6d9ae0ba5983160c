#!/bin/bash
# Where the floor of a Get round trip lies: a pinned synchronous round trip to beacond (Get of a 64-byte value),
# to three servers that answer every NUL-terminated frame with the same reply and do nothing else (one on SwiftNIO,
# Benchmarks/Bus/Sources/nio-floor, and one on Beacon's own event loop, Benchmarks/Bus/Sources/loop-floor, both with
# beacond's release flags; one in C directly on epoll, Benchmarks/Bus/floor/epoll-floor.c), and Redis PING with the
# peers' hiredis client (Benchmarks/Peers/redis_peer.c), all in one run, rounds interleaved, every process on CPU 0. beacond and the three floors
# are timed by the same client (beacon-bus-bench get). With CALLGRIND=1 it also counts each server's instructions per round trip (valgrind's callgrind, two run
# lengths differenced; beacond's by scripts/callgrind-ops.sh).
#
# usage: [REPS=5] [N=20000] [CALLGRIND=1] scripts/get-floor.sh
# Needs gcc, redis-server, libhiredis-dev, taskset (and valgrind with CALLGRIND=1).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${PEERS:-$ROOT/Benchmarks/Peers}
REPS=${REPS:-5}
N=${N:-20000}
WORK=$(mktemp -d /tmp/get-floor.XXXXXX)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

# build COMMAND...: runs COMMAND with its output in build.log, which is shown if it fails.
build() { "$@" >>"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log" >&2; exit 1; }; }
BIN=$("$ROOT/scripts/build-release.sh" beacond 2>>"$WORK/build.log") || { tail -30 "$WORK/build.log" >&2; exit 1; }
BEACOND=$BIN/beacond
flags="-c release -Xswiftc -enforce-exclusivity=unchecked"
cd "$ROOT/Benchmarks/Bus"
build swift build -c release --product beacon-bus-bench
BENCH=$(swift build -c release --show-bin-path)/beacon-bus-bench
# shellcheck disable=SC2086
build swift build $flags --scratch-path .build-floor --product nio-floor
# shellcheck disable=SC2086
build swift build $flags --scratch-path .build-floor --product loop-floor
# shellcheck disable=SC2086
NIOFLOOR=$(swift build $flags --scratch-path .build-floor --show-bin-path)/nio-floor
LOOPFLOOR=$(dirname "$NIOFLOOR")/loop-floor
cd "$ROOT"
gcc -O2 -Wall -o "$WORK/epoll-floor" "$ROOT/Benchmarks/Bus/floor/epoll-floor.c"
read -r -a hiredis_flags <<<"$(pkg-config --cflags --libs hiredis)"
gcc -std=c11 -O2 -Wall -Wextra -o "$WORK/redis_peer" "$PEERS/redis_peer.c" "${hiredis_flags[@]}"

# wait_socket PATH [TRIES]: until a server accepts connections on PATH, at most TRIES times 50 ms (default 10 s).
wait_socket() {
	python3 - "$1" "${2:-200}" <<-'PYTHON' || { echo "get-floor.sh: nothing listens on $1" >&2; exit 1; }
		import socket, sys, time
		for _ in range(int(sys.argv[2])):
		    try:
		        socket.socket(socket.AF_UNIX).connect(sys.argv[1])
		        sys.exit(0)
		    except OSError:
		        time.sleep(0.05)
		sys.exit(1)
	PYTHON
}

mkdir -m 700 "$WORK/run" "$WORK/state" "$WORK/config"
start_servers() {
	taskset -c 0 env XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
		BEACON_ADDRESS="unix:$WORK/beacond.sock" BEACON_LOG_LEVEL=warning \
		DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus" "$BEACOND" >"$WORK/beacond.log" 2>&1 &
	PIDS+=($!)
	taskset -c 0 "$NIOFLOOR" "$WORK/nio.sock" &
	PIDS+=($!)
	taskset -c 0 "$WORK/epoll-floor" "$WORK/epoll.sock" &
	PIDS+=($!)
	taskset -c 0 "$LOOPFLOOR" "$WORK/loop.sock" &
	PIDS+=($!)
	taskset -c 0 redis-server --port 0 --unixsocket "$WORK/redis.sock" --unixsocketperm 700 --save '' \
		--appendonly no --dir "$WORK" --logfile "$WORK/redis.log" --daemonize no &
	PIDS+=($!)
	for socket in beacond nio epoll loop redis; do wait_socket "$WORK/$socket.sock"; done
}
start_servers

# p50 LABEL COMMAND...: the p50 in µs that COMMAND printed, as "LABEL VALUE".
p50() {
	local label=$1
	shift
	taskset -c 0 "$@" | awk -F'|' -v label="$label" '$3 ~ /p50$/ {print label, $5}'
}
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg), $REPS rounds of $N round trips, all on CPU 0"
for rep in $(seq "$REPS"); do
	p50 "redis-ping" "$WORK/redis_peer" "$WORK/redis.sock" ping "$N"
	p50 "beacond-get" "$BENCH" "$WORK/beacond.sock" get "$N"
	p50 "nio-floor" "$BENCH" "$WORK/nio.sock" get "$N"
	p50 "epoll-floor" "$BENCH" "$WORK/epoll.sock" get "$N"
	p50 "loop-floor" "$BENCH" "$WORK/loop.sock" get "$N"
done | tee "$WORK/p50s"
echo "# medians of the rounds' p50 (µs) and their ratio to Redis PING"
python3 - "$WORK/p50s" <<'PYTHON'
import statistics, sys

values = {}
for line in open(sys.argv[1]):
    name, value = line.split()
    values.setdefault(name, []).append(float(value))
redis = statistics.median(values["redis-ping"])
for name in ("redis-ping", "beacond-get", "nio-floor", "epoll-floor", "loop-floor"):
    median = statistics.median(values[name])
    print(f"{name:12} {median:7.2f} µs  {median / redis:.2f}x")
PYTHON

[ "${CALLGRIND:-0}" = 1 ] || exit 0
for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
PIDS=()
# instructions NAME LENGTH SERVER ARGS...: the server's instruction total over a client run of LENGTH round trips.
instructions() {
	local name=$1 length=$2
	shift 2
	local out=$WORK/$name.$length.out socket=$WORK/cg-$name.sock
	rm -f "$socket"
	local client=("$BENCH" "$socket" get "$length")
	if [ "$name" = redis ]; then
		valgrind --tool=callgrind --callgrind-out-file="$out" "$@" --port 0 --unixsocket "$socket" --save '' \
			--appendonly no --dir "$WORK" --daemonize no >/dev/null 2>&1 &
		client=("$WORK/redis_peer" "$socket" ping "$length")
	else
		valgrind --tool=callgrind --callgrind-out-file="$out" "$@" "$socket" >/dev/null 2>&1 &
	fi
	local server=$!
	wait_socket "$socket" 1800
	"${client[@]}" >/dev/null
	kill -TERM "$server"
	wait "$server" || true
	awk '/^totals:/ {print $2}' "$out"
}
strip --strip-debug -o "$WORK/nio-floor-stripped" "$NIOFLOOR"
strip --strip-debug -o "$WORK/loop-floor-stripped" "$LOOPFLOOR"
echo "# server instructions per round trip (callgrind, 10,000 and 30,000 round trips differenced)"
for entry in "redis redis-server" "nio-floor $WORK/nio-floor-stripped" "epoll-floor $WORK/epoll-floor" \
	"loop-floor $WORK/loop-floor-stripped"; do
	set -- $entry
	a=$(instructions "$1" 10000 "$2")
	b=$(instructions "$1" 30000 "$2")
	echo "$1: $(((b - a) / 20000))"
done
# beacond's, measured the same way by the script that guards it.
ONLY='^Get' "$ROOT/scripts/callgrind-ops.sh" "$BEACOND"
