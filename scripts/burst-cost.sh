#!/bin/bash
# What a burst of pipelined Sets costs the daemon in wall-clock time, CPU time and page faults, for one or more
# builds measured in the same alternating runs. Each round starts every daemon fresh and runs the bus benchmark's
# pipelined Set workload (`beacon-bus-bench SOCKET setwatch N 1000`: N Sets of a 64-byte value, at most 1000
# unanswered, one watcher) RUNS times against it; the daemon's CPU time and minor page faults come from
# /proc/PID/stat before and after. Prints every round, then per build the medians over all runs of the rate the
# watcher saw and, per 1000 Sets, the daemon's CPU milliseconds and page faults.
# Usage: [ROUNDS=6] [RUNS=3] [N=300000] [EPHEMERAL=1] scripts/burst-cost.sh [BEACOND...]
# Without BEACOND, measures the release build (scripts/build-release.sh beacond).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/bench-daemon.sh"
if [ $# -eq 0 ]; then
	set -- "$("$ROOT/scripts/build-release.sh" beacond)/beacond"
fi
(cd "$ROOT/Benchmarks/Bus" && swift build -c release --product beacon-bus-bench >/dev/null)
BENCH=$(cd "$ROOT/Benchmarks/Bus" && swift build -c release --show-bin-path)/beacon-bus-bench
ROUNDS=${ROUNDS:-6}
RUNS=${RUNS:-3}
N=${N:-300000}
MODE=()
[ "${EPHEMERAL:-0}" = 1 ] && MODE=(ephemeral)
WORK=$(mktemp -d /tmp/beacon-burst.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
TICKS=$(getconf CLK_TCK)

# counters PID: minor faults and CPU ticks (user + system) of the process.
counters() { awk '{print $10, $14 + $15}' "/proc/$1/stat"; }

# round BEACOND: one fresh daemon, RUNS benchmark runs; appends "rate cpu-ms-per-1000 faults-per-1000" lines to the
# build's results and prints the round.
round() {
	local beacond=$1 out=$2
	bench_daemon_env "$WORK"
	local dir=$DAEMON_DIR socket=$DAEMON_SOCKET
	env "${DAEMON_ENV[@]}" "$beacond" >"$dir/log" 2>&1 &
	local daemon=$!
	for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.05; done
	[ -S "$socket" ] || {
		cat "$dir/log" >&2
		exit 1
	}
	local line=""
	for _ in $(seq "$RUNS"); do
		local before after rate
		read -r -a before <<<"$(counters "$daemon")"
		rate=$("$BENCH" "$socket" setwatch "$N" 1000 "${MODE[@]}" | awk -F'|' '/received\/s/ {printf "%d", $5}')
		read -r -a after <<<"$(counters "$daemon")"
		local faults=$(((after[0] - before[0]) * 1000 / N))
		local cpu
		cpu=$(awk -v t="$((after[1] - before[1]))" -v hz="$TICKS" -v n="$N" 'BEGIN {printf "%.2f", t * 1000 / hz * 1000 / n}')
		echo "$rate $cpu $faults" >>"$out"
		line="$line $rate/s ${cpu}ms ${faults}pf;"
	done
	kill -TERM "$daemon"
	wait "$daemon" || true
	echo "# $beacond:$line"
}

echo "# burst cost: setwatch $N 1000 ${MODE[*]}, $ROUNDS rounds of $RUNS runs, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$ROUNDS"); do
	i=0
	for beacond in "$@"; do
		i=$((i + 1))
		round "$beacond" "$WORK/results.$i"
	done
done
i=0
for beacond in "$@"; do
	i=$((i + 1))
	python3 - "$beacond" "$WORK/results.$i" <<-'PYTHON'
		import statistics, sys
		rows = [tuple(map(float, line.split())) for line in open(sys.argv[2])]
		rate, cpu, faults = (statistics.median(column) for column in zip(*rows))
		print(f"{sys.argv[1]}: median of {len(rows)} runs: {rate:,.0f} Sets/s seen by the watcher; "
		      f"daemon CPU {cpu:.2f} ms and {faults:,.0f} page faults per 1000 Sets")
	PYTHON
done
