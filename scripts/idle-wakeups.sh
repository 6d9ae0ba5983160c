#!/bin/bash
# Idle wake-ups of beacond beside dbus-daemon and dbus-broker (as scripts/dbus-broker.sh starts it, with its
# launcher's threads counted; left out without it), in one run: each daemon is started fresh with one idle client
# connected, left to settle, and the context switches of every one of its threads (voluntary and not, from
# /proc/PID/task/*/status) are counted over SECONDS. A thread blocked in epoll or a futex switches only when it
# wakes, so the count is the number of wake-ups. beacond runs with its lifecycle bridge off by default (with no
# system bus to reach, the bridge retries with a backoff, and those attempts are no idle cost); LIFECYCLE=mock
# connects it to python-dbusmock's logind on a private system bus (scripts/mock-logind.sh), LIFECYCLE=true leaves
# it to find the machine's. WATCHDOG=SECONDS runs beacond as under WatchdogSec=SECONDS: WATCHDOG_USEC and
# NOTIFY_SOCKET set, the notifications counted; the daemon pings at half the period.
# Usage: [SETTLE=2] [LIFECYCLE=false|mock|true] [WATCHDOG=SECONDS] scripts/idle-wakeups.sh [BEACOND] [SECONDS]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEACOND=${1:-}
SECONDS_IDLE=${2:-60}
PEERS=${PEERS:-$ROOT/Benchmarks/Peers}
if [ -z "$BEACOND" ]; then
	BEACOND=$("$ROOT/scripts/build-release.sh" beacond)/beacond
fi
WORK=$(mktemp -d /tmp/idle-wakeups.XXXXXX)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

# switches PID...: each thread's context switches so far, "TID COUNT" a line.
switches() {
	local pid task
	for pid in "$@"; do
		for task in /proc/"$pid"/task/*; do
			awk -v t="${task##*/}" '/ctxt_switches/ { n += $2 } END { print t, n + 0 }' "$task/status" 2>/dev/null || true
		done
	done
}
# idle_client SOCKET [dbus]: holds one connection open, saying nothing (a D-Bus one after authenticating and Hello).
idle_client() {
	PYTHONPATH="$ROOT/scripts" python3 -c 'import socket, sys, time
from wire import dbus_connect
if len(sys.argv) > 2:
    s = dbus_connect(sys.argv[1])
else:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
time.sleep(100000)' "$@" &
	PIDS+=($!)
}
# measure NAME PID...: the threads of every PID together.
measure() {
	local name=$1
	shift
	sleep "${SETTLE:-2}"
	switches "$@" >"$WORK/$name.before"
	sleep "$SECONDS_IDLE"
	switches "$@" >"$WORK/$name.after"
	# A thread that came meanwhile counts all its switches; one that went, one (at least its last wake-up).
	awk -v n="$name" -v s="$SECONDS_IDLE" '
		FNR == NR { before[$1] = $2; next }
		{ d += $2 - ($1 in before ? before[$1] : 0); seen[$1] = 1; threads++ }
		END {
			for (t in before) if (!(t in seen)) { d++; gone++ }
			printf "RESULT|%s|idle wake-ups per second, all threads (%d now, %d ended), %d s|1/s|%.3f\n", n, threads, gone, s, d / s
			printf "RESULT|%s|idle wake-ups in %d s|count|%d\n", n, s, d
		}' "$WORK/$name.before" "$WORK/$name.after"
}

mkdir -m 700 "$WORK/run" "$WORK/state" "$WORK/config"
SYSTEM_BUS="unix:path=$WORK/no-bus"
ENABLED=${LIFECYCLE:-false}
LEVEL=warning
if [ "$ENABLED" = mock ]; then
	# shellcheck source=scripts/mock-logind.sh
	. "$ROOT/scripts/mock-logind.sh"
	start_mock_logind "$WORK/bus"
	SYSTEM_BUS=$MOCK_BUS_ADDRESS
	ENABLED=true
	LEVEL=info # to show that the bridge connected; nothing is logged while idle
fi
EXTRA=()
if [ -n "${WATCHDOG:-}" ]; then
	# The service manager's end: a datagram socket that counts the daemon's notifications.
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
n = 0
while True:
    m = s.recv(4096)
    if b"WATCHDOG=1" in m.split(b"\n"):
        n += 1
        open(sys.argv[2], "w").write(str(n))' "$WORK/notify" "$WORK/pings" &
	PIDS+=($!)
	for _ in $(seq 100); do [ -S "$WORK/notify" ] && break; sleep 0.05; done
	EXTRA=(NOTIFY_SOCKET="$WORK/notify" WATCHDOG_USEC=$((WATCHDOG * 1000000)))
fi
# WATCHDOG_PID names the daemon: a shell execs it, keeping its pid.
env XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
	BEACON_ADDRESS="unix:$WORK/run/beacon.sock" BEACON_LOG_LEVEL=$LEVEL BEACON_LIFECYCLE_ENABLED="$ENABLED" \
	DBUS_SYSTEM_BUS_ADDRESS="$SYSTEM_BUS" XDG_SESSION_ID=c1 "${EXTRA[@]}" \
	sh -c '[ -n "${WATCHDOG_USEC:-}" ] && export WATCHDOG_PID=$$; exec "$@"' sh "$BEACOND" >"$WORK/beacond.log" 2>&1 &
BD=$!
PIDS+=("$BD")
for _ in $(seq 100); do [ -S "$WORK/run/beacon.sock" ] && break; sleep 0.05; done
idle_client "$WORK/run/beacon.sock"
measure beacond "$BD" &
M1=$!

cat >"$WORK/session.conf" <<EOF
<busconfig><type>session</type><listen>unix:path=$WORK/dbus.sock</listen>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/></policy></busconfig>
EOF
dbus-daemon --config-file="$WORK/session.conf" --nofork >"$WORK/dbus.log" 2>&1 &
DD=$!
PIDS+=("$DD")
for _ in $(seq 100); do [ -S "$WORK/dbus.sock" ] && break; sleep 0.05; done
idle_client "$WORK/dbus.sock" dbus
measure dbus-daemon "$DD" &
M2=$!
M3=
# shellcheck source=scripts/dbus-broker.sh
. "$ROOT/scripts/dbus-broker.sh"
if start_dbus_broker "$WORK" "$PEERS"; then
	idle_client "$BROKER_SOCKET" dbus
	measure dbus-broker "$BROKER_PID" "$BROKER_LAUNCHER_PID" &
	M3=$!
fi
wait "$M1" "$M2" $M3
if [ -n "${WATCHDOG:-}" ]; then
	echo "RESULT|beacond|watchdog notifications since start (WATCHDOG_USEC=${WATCHDOG} s)|count|$(cat "$WORK/pings" 2>/dev/null || echo 0)"
fi
if [ "${LIFECYCLE:-false}" = mock ]; then
	echo "# lifecycle: $(grep -o 'lifecycle bridge [a-z]*' "$WORK/beacond.log" | tail -1)"
fi
