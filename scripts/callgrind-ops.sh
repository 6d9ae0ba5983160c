#!/bin/bash
# Instructions the daemon executes per operation, counted by valgrind's callgrind (stable on a noisy machine,
# unlike wall-clock rates). Each workload of the bus benchmark runs at two lengths against a fresh daemon; the
# difference of the daemon's instruction totals divided by the extra operations removes start-up and shutdown.
#
# usage: [KEEP=1] [ONLY=REGEX] [SCHEMA=1] [STORE_KEYS=N] scripts/callgrind-ops.sh [BEACOND]   (default: the release
# build; needs valgrind and gcc). ONLY runs the workloads whose names match the extended regular expression, e.g.
# ONLY='Get|1->1'. SCHEMA=1 gives the benchmark's keys a schema (an object with a bounded string member, no other
# members) and the daemon a lockdown rule of other keys, so that every Get and Set goes through the settings' checks.
# STORE_KEYS=N starts every run on a copy of a store of N other keys (scripts/scale_keys.py's), written once by the
# daemon outside valgrind, and checked before serving in every run (so that each run counts the same check).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/bench-daemon.sh"
if [ $# -ge 1 ]; then
	BEACOND=$1
else
	BEACOND=$("$ROOT/scripts/build-release.sh" beacond)/beacond
fi
(cd "$ROOT/Benchmarks/Bus" && swift build -c release --product beacon-bus-bench >/dev/null)
BENCH=$(cd "$ROOT/Benchmarks/Bus" && swift build -c release --show-bin-path)/beacon-bus-bench
WORK=$(mktemp -d /tmp/beacon-callgrind.XXXXXX)
if [ "${KEEP:-0}" = 1 ]; then
	# The profiles stay, one run.*/out per run, for e.g. callgrind_annotate --inclusive=yes DIR/run.XXXXXX/out.
	trap 'echo "profiles kept in $WORK" >&2' EXIT
else
	trap 'rm -rf "$WORK"' EXIT
fi
# The daemon reads schemas and lockdown files from these directories only, never the machine's.
mkdir -p "$WORK/schemas" "$WORK/lockdown"
if [ "${SCHEMA:-0}" = 1 ]; then
	typed='{"type": "object", "properties": {"p": {"type": "string", "maxLength": 256}}, "required": ["p"],
		"additionalProperties": false}'
	cat >"$WORK/schemas/bench.json" <<-EOF
		{"keys": {"bench.get": $typed, "bench.value": $typed, "bench.other.*": {"type": "integer", "default": 0}}}
	EOF
	echo 'other.locked.** = true' >"$WORK/lockdown/bench"
fi
gcc -O2 -shared -fPIC -o "$WORK/sigsuspend.so" "$ROOT/scripts/valgrind-sigsuspend.c" -ldl
# valgrind 3.19 cannot read the debug information of Swift binaries.
strip --strip-debug -o "$WORK/beacond" "$BEACOND"

SEED=
if [ -n "${STORE_KEYS:-}" ]; then
	bench_daemon_env "$WORK"
	SEED=$DAEMON_DIR
	env "${DAEMON_ENV[@]}" "$BEACOND" >"$SEED/log" 2>&1 &
	seeder=$!
	for _ in $(seq 300); do [ -S "$DAEMON_SOCKET" ] && break; sleep 0.1; done
	PYTHONPATH="$ROOT/scripts" python3 "$ROOT/scripts/scale_keys.py" "$DAEMON_SOCKET" "$STORE_KEYS"
	kill -TERM "$seeder"
	wait "$seeder"
fi

# total ARGS...: the daemon's instruction total during one benchmark run.
total() {
	bench_daemon_env "$WORK"
	local dir=$DAEMON_DIR socket=$DAEMON_SOCKET
	if [ -n "$SEED" ]; then cp -a "$SEED/state/." "$dir/state/"; fi
	env "${DAEMON_ENV[@]}" BEACON_STORE_CHECK_AT_START_MAX_BYTES=1099511627776 BEACON_SETTINGS_SCHEMA_DIRS="$WORK/schemas" BEACON_SETTINGS_LOCKDOWN_DIR="$WORK/lockdown" \
		LD_PRELOAD="$WORK/sigsuspend.so" valgrind --tool=callgrind --callgrind-out-file="$dir/out" "$WORK/beacond" >"$dir/log" 2>&1 &
	local daemon=$!
	for _ in $(seq 900); do [ -S "$socket" ] && break; sleep 0.1; done
	"$BENCH" "$socket" "$@" >/dev/null || {
		kill -TERM "$daemon"
		wait "$daemon"
		cat "$dir/log" >&2
		return 1
	}
	kill -TERM "$daemon"
	wait "$daemon" || true
	awk '/^totals:/ {print $2}' "$dir/out"
}

# per NAME SHORT LONG DELIVERIES ARGS...: ARGS with N replaced by each length.
per() {
	local name=$1 short=$2 long=$3 deliveries=$4
	shift 4
	if [ -n "${ONLY:-}" ] && ! echo "$name" | grep -Eq "$ONLY"; then return 0; fi
	local a b
	a=$(total $(echo "$@" | sed "s/N/$short/"))
	b=$(total $(echo "$@" | sed "s/N/$long/"))
	echo "$name: $(((b - a) / ((long - short) * deliveries))) instructions per operation ($a at $short, $b at $long)"
}

per "Get round trip" 10000 30000 1 get N
per "notification 1->1, per delivery" 20000 60000 1 notify 1 N 1000
per "notification 1->10, per delivery" 10000 30000 10 notify 10 N 1000
per "Set one at a time, one watcher" 5000 15000 1 setwatch N 1
per "Set pipelined 1000, one watcher" 10000 30000 1 setwatch N 1000
per "Set pipelined 1000, ephemeral, one watcher" 10000 30000 1 setwatch N 1000 ephemeral
