#!/bin/bash
# Instructions the client process spends per change of a property bound with `<~` (BeaconClient, Signals): valgrind's
# callgrind on `beacon-bus-bench SOCKET bind 200 5` and `bind 400 5` (each round a block of raw Watch changes and a
# block of bound changes), the totals differenced and divided by the 1,000 extra bound changes. The raw blocks are
# read on the measuring thread, with no BeaconClient code; the daemon (the release build) runs outside valgrind.
#
# usage: scripts/client-bind-instructions.sh [BEACOND]   (needs valgrind)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEACOND=${1:-$("$ROOT/scripts/build-release.sh" beacond)/beacond}
(cd "$ROOT/Benchmarks/Bus" && swift build -c release --product beacon-bus-bench >/dev/null)
BENCH=$(cd "$ROOT/Benchmarks/Bus" && swift build -c release --show-bin-path)/beacon-bus-bench
WORK=$(mktemp -d /tmp/client-bind.XXXXXX)
DAEMON=
trap '[ -z "$DAEMON" ] || kill "$DAEMON" 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -m 700 "$WORK/run" "$WORK/state" "$WORK/config"
SOCK=$WORK/run/beacon.sock
env XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
	BEACON_ADDRESS="unix:$SOCK" BEACON_LOG_LEVEL=warning DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus" \
	"$BEACOND" >"$WORK/beacond.log" 2>&1 &
DAEMON=$!
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || { cat "$WORK/beacond.log" >&2; exit 1; }
# valgrind 3.19 cannot read the debug information of Swift binaries.
strip --strip-debug -o "$WORK/bench" "$BENCH"
total() {
	valgrind --tool=callgrind --callgrind-out-file="$WORK/out.$1" "$WORK/bench" "$SOCK" bind "$1" 5 >/dev/null 2>&1
	awk '/^totals:/ {print $2}' "$WORK/out.$1"
}
a=$(total 200)
b=$(total 400)
echo "client instructions per bound change: $(((b - a) / 1000)) ($a at bind 200 5, $b at bind 400 5)"
