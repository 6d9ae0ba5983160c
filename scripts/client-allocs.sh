#!/bin/bash
# Heap allocations BeaconClient makes per delivered change: a remote property bound with <~ to a local Property
# follows N Sets made one at a time by a raw connection (each waited for), under valgrind's memcheck, for two N.
# The difference of the process's allocation totals, divided by the difference of N, is the cost of one change
# (start-up and connection set-up cancel out). Then the instructions the client process spends per bound change,
# counted the same way by valgrind's callgrind on `beacon-bus-bench bind 200 5` and `bind 400 5` (each round a block
# of raw Watch changes, read on the measuring thread with no BeaconClient code, and a block of bound changes; the
# 1,000 extra bound changes divide the difference). Usage: scripts/client-allocs.sh [N1 N2]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N1=${1:-200}
N2=${2:-1200}
command -v valgrind >/dev/null || apt-get install -y -q valgrind >/dev/null
WORK=$(mktemp -d /tmp/client-allocs.XXXXXX)
DAEMON=
cleanup() {
	[ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
BIN=$("$ROOT/scripts/build-release.sh" beacond 2>"$WORK/build.log") || { tail -20 "$WORK/build.log"; exit 1; }
(cd "$ROOT/Benchmarks/Bus" && swift build -c release --product beacon-bus-bench) >>"$WORK/build.log" 2>&1 ||
	{ tail -20 "$WORK/build.log"; exit 1; }
BENCH=$(cd "$ROOT/Benchmarks/Bus" && swift build -c release --show-bin-path)/beacon-bus-bench
# valgrind 3.19 cannot read the debug information of Swift binaries.
strip --strip-debug -o "$WORK/bench" "$BENCH"
mkdir -m 700 "$WORK/run" "$WORK/state" "$WORK/config"
SOCK=$WORK/run/beacon.sock
env XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
	BEACON_ADDRESS="unix:$SOCK" BEACON_LOG_LEVEL=warning DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus" \
	"$BIN/beacond" >"$WORK/beacond.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || { cat "$WORK/beacond.log"; exit 1; }
allocs() {
	valgrind --tool=memcheck --leak-check=no "$WORK/bench" "$SOCK" bindallocs "$1" 2>&1 |
		sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
}
A1=$(allocs "$N1")
A2=$(allocs "$N2")
echo "allocations: $A1 for $N1 changes, $A2 for $N2 changes"
awk -v a1="$A1" -v a2="$A2" -v n1="$N1" -v n2="$N2" \
	'BEGIN { printf "RESULT|BeaconClient|heap allocations per delivered change (<~ bound)|allocs|%.2f\n", (a2 - a1) / (n2 - n1) }'
instructions() {
	valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.$1" "$WORK/bench" "$SOCK" bind "$1" 5 >/dev/null 2>&1
	awk '/^totals:/ {print $2}' "$WORK/callgrind.$1"
}
I1=$(instructions 200)
I2=$(instructions 400)
echo "instructions: $I1 at bind 200 5, $I2 at bind 400 5"
echo "RESULT|BeaconClient|instructions per delivered change (<~ bound)|instr|$(((I2 - I1) / 1000))"
