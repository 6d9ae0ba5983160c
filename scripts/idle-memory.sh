#!/bin/bash
# Idle memory of beacond beside dbus-broker and dbus-daemon, in one run: each daemon is started fresh with one
# client that has made one call, left to settle, and measured from /proc/PID/smaps_rollup (RSS and PSS); then
# CONNS more clients connect, each makes one call and stays, and the growth of PSS divided by CONNS is the memory
# of an idle connection. beacond's PSS is broken down by mapping: the text, read-only data and data of the binary
# and of each library, the heap, thread stacks (an anonymous mapping just above a guard page) and the other
# anonymous memory. A varlink client calls org.varlink.service.GetInfo; a D-Bus client authenticates and says
# Hello. dbus-broker runs as the bus benchmark runs it (Benchmarks/Peers/dbus-broker-ns.sh: a private mount
# namespace and socket activation; its PSS is the broker's plus its launcher's).
# LIFECYCLE=mock connects beacond's lifecycle bridge to python-dbusmock's logind on a private system bus
# (scripts/mock-logind.sh), so that the memory of the bridge's sd-bus is counted; without it the bridge has no
# system bus to reach.
# Usage: [CONNS=1000] [SETTLE=3] [LIFECYCLE=mock] [PEERS=DIR] scripts/idle-memory.sh [BEACOND]
# Without BEACOND, builds what `make install-user` installs (scripts/build-release.sh --static-swift-stdlib).
# Needs root for dbus-broker's namespace; without dbus-broker or the peers, its rows are left out.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEACOND=${1:-}
PEERS=${PEERS:-$ROOT/Benchmarks/Peers}
if [ -z "$BEACOND" ]; then
	BEACOND=$("$ROOT/scripts/build-release.sh" --static-swift-stdlib beacond)/beacond
fi
WORK=$(mktemp -d /tmp/idle-memory.XXXXXX)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n 8192 2>/dev/null || true
wait_socket() { for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done; echo "no socket $1" >&2; return 1; }

# measure NAME KIND SOCKET PID... : KIND is varlink or dbus; the first PID is the one broken down.
measure() {
	PYTHONPATH="$ROOT/scripts" python3 - "$@" <<'PYTHON'
import os, re, sys, time

from wire import VarlinkConnection, dbus_connect

name, kind, path, pids = sys.argv[1], sys.argv[2], sys.argv[3], [int(p) for p in sys.argv[4:]]
conns = int(os.environ.get("CONNS", "1000"))
settle = float(os.environ.get("SETTLE", "3"))

def client():
    if kind == "dbus":
        return dbus_connect(path)
    connection = VarlinkConnection(path)
    connection.call("org.varlink.service.GetInfo")
    return connection.socket

def rollup(pid):
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            m = re.match(r"(\w+):\s+(\d+) kB", line)
            if m:
                values[m.group(1)] = int(m.group(2))
    return values

def total(key):
    return sum(rollup(p)[key] for p in pids)

def breakdown(pid):
    maps, current = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)", line)
            if head:
                current = {"start": int(head.group(1), 16), "end": int(head.group(2), 16), "perms": head.group(3),
                           "path": head.group(4).strip()}
                maps.append(current)
            else:
                m = re.match(r"(Pss|Rss):\s+(\d+) kB", line)
                if m:
                    current[m.group(1)] = int(m.group(2))
    exe = os.path.realpath(f"/proc/{pid}/exe")
    groups = {}
    for i, m in enumerate(maps):
        p, perms = m["path"], m["perms"]
        part = "text" if "x" in perms else ("data" if "w" in perms else "read-only")
        if p == exe or p.startswith("/") and os.path.basename(p) == os.path.basename(exe):
            label = f"{os.path.basename(exe)} {part}"
        elif p.startswith("/"):
            label = f"{os.path.basename(p)} {'text' if part == 'text' else 'data and read-only'}"
        elif p == "[heap]":
            label = "heap (brk)"
        elif p == "[stack]":
            label = "main thread stack"
        elif p.startswith("["):
            label = p
        elif i > 0 and maps[i - 1]["perms"].startswith("---") and maps[i - 1]["end"] == m["start"] \
                and maps[i - 1]["end"] - maps[i - 1]["start"] <= 65536:
            label = "thread stacks"
        else:
            label = "other anonymous (malloc mmaps, buffers)"
        pss, rss = groups.get(label, (0, 0))
        groups[label] = (pss + m.get("Pss", 0), rss + m.get("Rss", 0))
    return groups

first = client()
time.sleep(settle)
base = rollup(pids[0])
pss0, rss0 = total("Pss"), total("Rss")
threads = len(os.listdir(f"/proc/{pids[0]}/task"))
print(f"RESULT|{name}|idle RSS, one client|KiB|{rss0}")
print(f"RESULT|{name}|idle PSS, one client|KiB|{pss0}")
print(f"RESULT|{name}|threads|count|{threads}")
if name == "beacond":
    for label, (pss, rss) in sorted(breakdown(pids[0]).items(), key=lambda item: -item[1][0]):
        if pss:
            print(f"BREAKDOWN|{label}|{pss}|{rss}")
others = [client() for _ in range(conns)]
time.sleep(settle)
pss1 = total("Pss")
print(f"RESULT|{name}|PSS with {conns} more idle clients|KiB|{pss1}")
print(f"RESULT|{name}|PSS per extra idle connection|KiB|{(pss1 - pss0) / conns:.2f}")
for s in others + [first]:
    s.close()
PYTHON
}

# beacond, on its embedded defaults, with a private state directory and no system bus to reach (or, with
# LIFECYCLE=mock, the mock logind's).
mkdir -m 700 "$WORK/run" "$WORK/state" "$WORK/config"
SYSTEM_BUS="unix:path=$WORK/no-bus"
LEVEL=warning
if [ "${LIFECYCLE:-}" = mock ]; then
	# shellcheck source=scripts/mock-logind.sh
	. "$ROOT/scripts/mock-logind.sh"
	start_mock_logind "$WORK/bus"
	SYSTEM_BUS=$MOCK_BUS_ADDRESS
	LEVEL=info # the bridge logs that it connected
fi
env XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
	BEACON_ADDRESS="unix:$WORK/run/beacon.sock" BEACON_LOG_LEVEL=$LEVEL XDG_SESSION_ID=c1 \
	DBUS_SYSTEM_BUS_ADDRESS="$SYSTEM_BUS" "$BEACOND" >"$WORK/beacond.log" 2>&1 &
BD=$!
PIDS+=("$BD")
wait_socket "$WORK/run/beacon.sock"
echo "# beacond: $BEACOND ($(stat -c %s "$BEACOND") bytes)"
if [ "${LIFECYCLE:-}" = mock ]; then
	for _ in $(seq 200); do grep -q 'lifecycle bridge connected' "$WORK/beacond.log" && break; sleep 0.05; done
	echo "# lifecycle: $(grep -o 'lifecycle bridge [a-z]*' "$WORK/beacond.log" | tail -1)"
fi
measure beacond varlink "$WORK/run/beacon.sock" "$BD"

cat >"$WORK/session.conf" <<EOF
<busconfig><type>session</type><listen>unix:path=$WORK/dbus.sock</listen>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/></policy><limit name="max_completed_connections">100000</limit>
<limit name="max_connections_per_user">100000</limit></busconfig>
EOF
dbus-daemon --config-file="$WORK/session.conf" --nofork >"$WORK/dbus.log" 2>&1 &
DD=$!
PIDS+=("$DD")
wait_socket "$WORK/dbus.sock"
measure dbus-daemon dbus "$WORK/dbus.sock" "$DD"

# shellcheck source=scripts/dbus-broker.sh
. "$ROOT/scripts/dbus-broker.sh"
if start_dbus_broker "$WORK" "$PEERS"; then
	measure dbus-broker dbus "$BROKER_SOCKET" "$BROKER_PID" "$BROKER_LAUNCHER_PID"
fi
