#!/bin/bash
# Writes scripts/beacond.order: the functions of beacond that run when it starts, serves the common calls and idles,
# for the linker to lay out side by side (scripts/build-release.sh links with lld's --symbol-ordering-file).
#
# Why: the kernel maps a program's code in 64 KiB blocks around each page that runs (fault-around), and the daemon's
# 7 MiB of code (most of it the Swift standard library and SwiftNIO, linked in) is used in small pieces spread over
# all of it, so a few requests made nearly all of it resident. With the functions that run laid out together, the
# blocks they fall in are few.
#
# How: the daemon (stripped of debug information, which valgrind 3.19 cannot read) runs under valgrind's callgrind
# with its lifecycle bridge connected to python-dbusmock's logind on a private system bus, a schema and a lockdown
# rule, while beacon-bus-bench and a varlink client make every kind of call (including bad ones), then stops on
# SIGTERM. Every function of the binary that ran is listed, in the order of its address in a link map of the
# current build, which keeps each module's functions together. Code that is not split into a section per function
# (most of the Swift standard library's, in its static archives) moves as one block with any function of it that
# is listed. A symbol that a later build no longer has is skipped by the linker, so a stale list costs locality,
# never correctness. Functions listed before that the build still has stay listed. Moving code to another module
# renames its symbols: run this again then (moving the JSON parser and the varlink messages from BeaconProtocol to
# Varlink left 247 entries stale and raised the idle daemon's PSS from 6,655 to 7,279 KiB until it was rerun).
#
# usage: [KEEP=1] scripts/code-order.sh [BEACOND]   (default: the static release build). Needs valgrind, gcc,
# dbus-daemon, busctl and python3-dbusmock.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEACOND=${1:-}
if [ -z "$BEACOND" ]; then
	BEACOND=$("$ROOT/scripts/build-release.sh" --static-swift-stdlib beacond)/beacond
fi
(cd "$ROOT/Benchmarks/Bus" && swift build -c release --product beacon-bus-bench >/dev/null)
BENCH=$(cd "$ROOT/Benchmarks/Bus" && swift build -c release --show-bin-path)/beacon-bus-bench
WORK=$(mktemp -d /tmp/code-order.XXXXXX)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# shellcheck source=scripts/mock-logind.sh
. "$ROOT/scripts/mock-logind.sh"
start_mock_logind "$WORK/bus"

mkdir -p "$WORK/schemas" "$WORK/lockdown"
cat >"$WORK/schemas/train.json" <<-EOF
	{"keys": {"train.typed": {"type": "object", "properties": {"p": {"type": "string", "maxLength": 64}},
	 "required": ["p"], "additionalProperties": false}, "train.count": {"type": "integer", "default": 3}}}
EOF
echo 'train.locked.** = true' >"$WORK/lockdown/train"
gcc -O2 -shared -fPIC -o "$WORK/sigsuspend.so" "$ROOT/scripts/valgrind-sigsuspend.c" -ldl
strip --strip-debug -o "$WORK/beacond" "$BEACOND"
mkdir -m 700 "$WORK/run" "$WORK/state" "$WORK/config"
SOCK=$WORK/run/beacon.sock
# start_daemon NAME LEVEL SYSTEM_BUS: the daemon under callgrind, its profile in $WORK/NAME.out; sets DAEMON.
start_daemon() {
	rm -f "$SOCK"
	env XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
		BEACON_ADDRESS="unix:$SOCK" BEACON_LOG_LEVEL="$2" XDG_SESSION_ID=c1 DBUS_SYSTEM_BUS_ADDRESS="$3" \
		BEACON_SETTINGS_SCHEMA_DIRS="$WORK/schemas" BEACON_SETTINGS_LOCKDOWN_DIR="$WORK/lockdown" \
		LD_PRELOAD="$WORK/sigsuspend.so" valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
		--demangle=no --callgrind-out-file="$WORK/$1.out" "$WORK/beacond" >"$WORK/$1.log" 2>&1 &
	DAEMON=$!
	PIDS+=("$DAEMON")
	for _ in $(seq 900); do [ -S "$SOCK" ] && break; sleep 0.1; done
	[ -S "$SOCK" ] || { cat "$WORK/$1.log" >&2; exit 1; }
}
start_daemon bridge info "$MOCK_BUS_ADDRESS"

"$BENCH" "$SOCK" get 2000 || { echo "beacon-bus-bench get 2000 failed" >&2; exit 1; }
"$BENCH" "$SOCK" notify 2 2000 100 || { echo "beacon-bus-bench notify 2 2000 100 failed" >&2; exit 1; }
"$BENCH" "$SOCK" setwatch 2000 100 || { echo "beacon-bus-bench setwatch 2000 100 failed" >&2; exit 1; }
"$BENCH" "$SOCK" setwatch 2000 100 ephemeral || { echo "beacon-bus-bench setwatch 2000 100 ephemeral failed" >&2; exit 1; }
PYTHONPATH="$ROOT/scripts" python3 - "$SOCK" <<'PYTHON'
import sys

from wire import VarlinkConnection

path = sys.argv[1]
c = VarlinkConnection(path)
watcher, observer = VarlinkConnection(path), VarlinkConnection(path)
watcher.send("io.beacon.Properties.Watch", {"patterns": ["train.**"], "initial": True, "old": True}, more=True)
watcher.read()
observer.send("io.beacon.Notifications.Observe", {"patterns": ["train.*"]}, more=True)
observer.read()
calls = [
    ("org.varlink.service.GetInfo", None),
    ("org.varlink.service.GetInterfaceDescription", {"interface": "io.beacon.Properties"}),
    ("io.beacon.Properties.Set", {"key": "train.a", "value": {"x": [1, 2.5, "s", True, None]}}),
    ("io.beacon.Properties.Set", {"key": "train.b", "value": 1, "ephemeral": True}),
    ("io.beacon.Properties.Set", {"key": "train.a", "value": 2, "ifVersion": 1}),
    ("io.beacon.Properties.Set", {"key": "train.typed", "value": {"p": "ok"}}),
    ("io.beacon.Properties.Set", {"key": "train.typed", "value": {"p": 1}}),
    ("io.beacon.Properties.Set", {"key": "train.locked.x", "value": 1}),
    ("io.beacon.Properties.Set", {"key": "bad..key", "value": 1}),
    ("io.beacon.Properties.Get", {"key": "train.a"}),
    ("io.beacon.Properties.Get", {"key": "train.count"}),
    ("io.beacon.Properties.Get", {"key": "train.missing"}),
    ("io.beacon.Properties.List", {"prefix": "train"}),
    ("io.beacon.Properties.Unset", {"key": "train.b"}),
    ("io.beacon.Notifications.Post", {"name": "train.note", "userInfo": {"a": 1}}),
    ("io.beacon.Notifications.Post", {"name": "train.note", "object": "o", "deliverImmediately": True}),
    ("io.beacon.Settings.Describe", {"key": "train.typed"}),
    ("io.beacon.Settings.Schemas", None),
    ("io.beacon.Settings.Dump", {"prefix": "train"}),
    ("io.beacon.Settings.Load", {"prefix": "train.loaded", "values": {"a": 1}}),
    ("io.beacon.Settings.Reset", {"key": "train.count"}),
    ("io.beacon.Daemon.Status", None),
    ("io.beacon.Daemon.Clients", None),
    ("io.beacon.Lifecycle.State", None),
    ("io.beacon.Suspend", None),
    ("io.beacon.Resume", None),
    ("io.beacon.NoSuchMethod", None),
]
for _ in range(20):
    for method, parameters in calls:
        c.call(method, parameters)
watcher.read()
c.send("io.beacon.Properties.Set", {"key": "train.c", "value": 1}, oneway=True)
c.socket.sendall(b'{"method": "io.beacon.Properties.Get", "parameters": {"key": 1}}\0')
c.read()
c.socket.sendall(b'{not json}\0')
PYTHON
kill -TERM "$DAEMON"
wait "$DAEMON" || true
# A second start as the measuring scripts run the daemon: warnings only, no system bus, then one client's calls.
start_daemon plain warning "unix:path=$WORK/no-bus"
"$BENCH" "$SOCK" get 200 || { echo "beacon-bus-bench get 200 failed" >&2; exit 1; }
kill -TERM "$DAEMON"
wait "$DAEMON" || true
# Every function of the daemon's own binary (ob=) with a cost line after its fn= line, by address.
awk -v binary="$WORK/beacond" '
	FNR == 1 { ob = "" }
	/^ob=/ { ob = substr($0, 4) }
	/^fn=/ { if (ob == binary) print substr($0, 4) }
' "$WORK/bridge.out" "$WORK/plain.out" | sort -u >"$WORK/ran"
# A name that several local symbols share (partial-application thunks such as ...TA, objectdestroyTm, a C file's
# static helpers) moves every section that defines one. That costs little when the sections are a function each,
# and a lot when one of them is a module of the standard library that is not split (RegexParser's 475 KiB of code,
# for one thunk name). The link map (the daemon linked again with -Map) says which input sections are large; a
# shared name is left out when any of its definitions lies in a large section that no other listed function needs.
"$ROOT/scripts/build-release.sh" --static-swift-stdlib "-Xlinker=-Map=$WORK/map" beacond >/dev/null
cp "$ROOT/scripts/beacond.order" "$WORK/listed-before"
python3 - "$WORK/ran" "$WORK/map" "$WORK/listed-before" >"$ROOT/scripts/beacond.order" <<'PYTHON'
import collections, sys

ran = {line.split("'")[0].strip() for line in open(sys.argv[1])}
section_of, sections, big = collections.defaultdict(list), [], set()
for line in open(sys.argv[2]):
    fields = line.split(None, 4)
    if len(fields) < 5:
        continue
    try:
        address, size, name = int(fields[0], 16), int(fields[2], 16), fields[4].strip()
    except ValueError:  # the header
        continue
    if ":(" in name:
        sections.append((address, name))
        if ".text" in name and size > 65536:
            big.add(len(sections) - 1)
    elif sections and not name.startswith("."):
        section_of[name].append((address, len(sections) - 1))
# The list only grows: a function that ran in an earlier training run and is still in the build stays listed, for
# what one run may not meet (a partial write, a reconnection).
ran |= {line.strip() for line in open(sys.argv[3])} & set(section_of)
wanted_big = {s for name, places in section_of.items() if name in ran and len(places) == 1 for _, s in places
              if s in big}
listed = []
for name in ran:
    places = section_of.get(name, [])
    if len(places) > 1 and any(s in big and s not in wanted_big for _, s in places):
        continue
    # Functions the map does not name (some of the runtime's C++) go last, in name order.
    listed.append((min((a for a, _ in places), default=1 << 64), name))
for _, name in sorted(listed):
    if not name.startswith("0x"):
        print(name)
PYTHON
# The marker that ends the listed code (Sources/CMalloc/cold-text.c): once started, the daemon drops the pages of
# code after it from its page tables.
echo beacon_cold_text_begins >>"$ROOT/scripts/beacond.order"
echo "$(wc -l <"$ROOT/scripts/beacond.order") functions listed in scripts/beacond.order"
