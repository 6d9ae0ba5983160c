#!/bin/bash
# Runs the bus peers (Benchmarks/Peers/run.sh: Unix sockets, dbus-daemon, dbus-broker, Redis) and the same
# tests against beacond (Benchmarks/Bus, beacon-bus-bench) in one invocation, then prints the peers' table with
# the beacond rows added, and the issue's goal ratios.
#
#   scripts/bus-bench.sh                   # REPS=3
#   REPS=5 scripts/bus-bench.sh
#   KEEP=1 scripts/bus-bench.sh            # keep the work dirs (this script's and the peers')
#   PEERS=/path/to/Peers scripts/bus-bench.sh   # another copy of Benchmarks/Peers
#
# The peers run between the two halves of beacond's repetitions, with RESULTS= naming the file that receives
# their raw RESULT lines; their '#' header lines are printed here, and one table is made of both sets of lines
# with the peers' table.py.
#
# Needs root (dbus-broker runs in a private mount namespace) and the Debian packages
#   gcc pkg-config libsystemd-dev libhiredis-dev dbus-daemon dbus-broker redis-server redis-tools util-linux
# which are installed with apt-get when a command is missing.
#
# beacond runs on a private socket with a temporary state directory and these non-default limits:
#   BEACON_LIMITS_MAX_QUEUED_BYTES=268435456  (256 MiB per connection, so that a subscriber falling behind a
#                                              pipelined publisher is counted, not coalesced; Redis's pub/sub
#                                              buffer limit is 32 MiB)
# The 10,000-subscriber test raises `ulimit -n` for the daemon and the client.
#
# The pinned Get goal is also measured against a Redis PING taken right before each pinned Get, with the peers'
# own redis_peer against a private redis-server (system "redis, paired with beacond"): the peers' Redis rows
# come from repetitions minutes apart from beacond's, and load from other work on a 2-CPU machine moves a pinned
# p50 by more than the margin the goal leaves. Both ratios are printed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${PEERS:-$ROOT/Benchmarks/Peers}
REPS=${REPS:-3}
CONNS=${CONNS:-10000}
WORK=$(mktemp -d /tmp/bus-bench.XXXXXX)
RAW=$WORK/beacond-results.txt
: >"$RAW"
BD_PID=
RD_PID=
cleanup() {
	[ -n "$BD_PID" ] && kill "$BD_PID" 2>/dev/null && wait "$BD_PID" 2>/dev/null
	[ -n "$RD_PID" ] && kill "$RD_PID" 2>/dev/null && wait "$RD_PID" 2>/dev/null
	if [ "${KEEP:-0}" = 1 ]; then
		echo "work dir kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
die() { echo "bus-bench.sh: $*" >&2; exit 1; }
[ -x "$PEERS/run.sh" ] || die "no peers at $PEERS (Benchmarks/Peers/run.sh, or set PEERS=DIR)"

# ---------------------------------------------------------------- packages and builds
need=()
for c in gcc:gcc pkg-config:pkg-config dbus-daemon:dbus-daemon dbus-broker:dbus-broker \
	dbus-broker-launch:dbus-broker redis-server:redis-server redis-cli:redis-tools unshare:util-linux \
	taskset:util-linux busctl:systemd systemd-socket-activate:systemd; do
	command -v "${c%%:*}" >/dev/null || need+=("${c#*:}")
done
pkg-config --exists libsystemd 2>/dev/null || need+=(libsystemd-dev)
pkg-config --exists hiredis 2>/dev/null || need+=(libhiredis-dev)
if [ ${#need[@]} -gt 0 ]; then
	echo "# installing: ${need[*]}"
	apt-get install -y -q "${need[@]}" >"$WORK/apt.log" 2>&1 ||
		die "apt-get install ${need[*]} failed: $(tail -5 "$WORK/apt.log")"
fi

BIN=$("$ROOT/scripts/build-release.sh" beacond 2>"$WORK/build.log") ||
	die "beacond build failed: $(tail -20 "$WORK/build.log")"
BEACOND=$BIN/beacond
(cd "$ROOT/Benchmarks/Bus" && swift build -c release --product beacon-bus-bench) >>"$WORK/build.log" 2>&1 ||
	die "bench build failed: $(tail -20 "$WORK/build.log")"
BENCH=$(cd "$ROOT/Benchmarks/Bus" && swift build -c release --show-bin-path)/beacon-bus-bench
read -r -a hiredis_flags <<<"$(pkg-config --cflags --libs hiredis)"
gcc -std=c11 -O2 -Wall -Wextra -o "$WORK/redis_peer" "$PEERS/redis_peer.c" "${hiredis_flags[@]}" \
	>>"$WORK/build.log" 2>&1 || die "redis_peer build failed: $(tail -20 "$WORK/build.log")"

# ---------------------------------------------------------------- beacond
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
SOCK=$WORK/run/beacon.sock
mkdir -p "$WORK/run" "$WORK/state" "$WORK/config"
env XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
	BEACON_ADDRESS="unix:$SOCK" BEACON_LIMITS_MAX_QUEUED_BYTES=268435456 BEACON_LOG_LEVEL=warning \
	"$BEACOND" >"$WORK/beacond.log" 2>&1 &
BD_PID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || die "beacond did not start: $(cat "$WORK/beacond.log")"
sleep 0.2
rss() { awk '/VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
IDLE_RSS=$(rss "$BD_PID")

# The paired Redis: unix socket only, no persistence, as in the peers' run.
RD_SOCK=$WORK/redis.sock
redis-server --port 0 --unixsocket "$RD_SOCK" --unixsocketperm 700 --save '' --appendonly no --dir "$WORK" \
	--logfile "$WORK/redis.log" --daemonize no &
RD_PID=$!
for _ in $(seq 100); do redis-cli -s "$RD_SOCK" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -s "$RD_SOCK" ping >/dev/null 2>&1 || die "redis-server did not start: $(tail -5 "$WORK/redis.log")"

rec() { "$@" 2>>"$WORK/errors.log" | grep '^RESULT' >>"$RAW" || echo "FAILED: $*" | tee -a "$WORK/errors.log" >&2; }
tag_pinned() { sed 's/^\(RESULT|[^|]*|[^|]*\)|/\1 [all on cpu0]|/'; }
# rec_pinned PID COMMAND...: COMMAND and the daemon PID on CPU 0.
rec_pinned() {
	local daemon=$1
	shift
	taskset -a -p -c 0 "$daemon" >/dev/null
	taskset -c 0 "$@" 2>>"$WORK/errors.log" | grep '^RESULT' | tag_pinned >>"$RAW" ||
		echo "FAILED (pinned): $*" | tee -a "$WORK/errors.log" >&2
	taskset -a -p -c "0-$(($(nproc) - 1))" "$daemon" >/dev/null
}

beacond_rep() {
	echo "RESULT|host|1-min loadavg at start of beacond repetition|load|$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
	rec "$BENCH" "$SOCK" get 20000
	rec_pinned "$RD_PID" "$WORK/redis_peer" "$RD_SOCK" ping 20000
	sed -i 's/^RESULT|redis|/RESULT|redis, paired with beacond|/' "$RAW"
	rec_pinned "$BD_PID" "$BENCH" "$SOCK" get 20000
	rec_pinned "$BD_PID" "$BENCH" "$SOCK" bind "${BIND_BLOCK:-500}" "${BIND_ROUNDS:-4}"
	rec "$BENCH" "$SOCK" notify 1 "${N1:-1000000}" 1000
	rec "$BENCH" "$SOCK" notify 10 "${N10:-200000}" 1000
	rec "$BENCH" "$SOCK" setwatch "${NSET:-10000}"
	rec "$BENCH" "$SOCK" setwatch "${NSETP:-300000}" 1000
	rec "$BENCH" "$SOCK" setwatch "${NSET:-10000}" 1 ephemeral
	rec "$BENCH" "$SOCK" setwatch "${NSETE:-300000}" 1000 ephemeral
}

# ---------------------------------------------------------------- runs: beacond, peers, beacond
echo "# beacond $BEACOND (pid $BD_PID), bench $BENCH, reps=$REPS, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
# The subscriber test runs first, on the fresh daemon: memory freed by later tests stays in the allocator and
# would hide the growth.
echo "RESULT|beacond|RSS idle after start|KiB|$IDLE_RSS" >>"$RAW"
rec "$BENCH" "$SOCK" conns "$CONNS" "$BD_PID"
half=$(((REPS + 1) / 2))
for rep in $(seq "$half"); do
	echo "# beacond repetition $rep/$REPS ($(date +%T))" >&2
	beacond_rep
done
PEERS_RAW=$WORK/peers-results.txt
REPS=$REPS KEEP=${KEEP:-0} RESULTS=$PEERS_RAW "$PEERS/run.sh" >"$WORK/peers.out" 2>"$WORK/peers.err" ||
	die "peers failed: $(tail "$WORK/peers.err")"
[ -s "$PEERS_RAW" ] || die "peers produced no results: $(tail "$WORK/peers.out")"
for rep in $(seq $((half + 1)) "$REPS"); do
	echo "# beacond repetition $rep/$REPS ($(date +%T))" >&2
	beacond_rep
done
echo "RESULT|beacond|RSS after runs|KiB|$(rss "$BD_PID")" >>"$RAW"

# ---------------------------------------------------------------- table and goals
grep '^#' "$WORK/peers.out" | grep -v '^# stderr'
sed -n 's/^work dir kept: /# peers work dir kept: /p' "$WORK/peers.out"
[ -s "$WORK/errors.log" ] && { echo "# beacond bench stderr:"; head -10 "$WORK/errors.log" | sed 's/^/#   /'; }
cat "$PEERS_RAW" "$RAW" >"$WORK/all.txt"
echo
/usr/bin/python3 "$PEERS/table.py" "$WORK/all.txt"
echo
/usr/bin/python3 - "$WORK/all.txt" "$CONNS" <<'EOF'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    p = line.rstrip("\n").split("|")
    if len(p) == 5 and p[0] == "RESULT":
        vals.setdefault((p[1], p[2]), []).append(float(p[4]))
def med(system, test):
    v = vals.get((system, test))
    return statistics.median(v) if v else None
k = sys.argv[2]
b11 = med("beacond", "Post 1->1 subs, delivered/s (sum at subscribers), oneway pipeline 1000")
b110 = med("beacond", "Post 1->10 subs, delivered/s (sum at subscribers), oneway pipeline 1000")
r11 = med("redis", "PUBLISH 1->1 subs, delivered/s (sum at subscribers), pipeline 1000")
r110 = med("redis", "PUBLISH 1->10 subs, delivered/s (sum at subscribers), pipeline 1000")
d11 = med("dbus-broker", "signal 1->1 subs, delivered/s (sum at subscribers)")
bget = med("beacond", "Get rtt 64B value p50 [all on cpu0]")
rping = med("redis", "PING rtt p50 [all on cpu0]")
# Each beacond repetition measures a Redis PING right before its Get: the median of those per-repetition ratios.
# A repetition whose PING or Get failed leaves the two lists of different lengths: then no pairs are made up.
pings = vals.get(("redis, paired with beacond", "PING rtt p50 [all on cpu0]"), [])
gets = vals.get(("beacond", "Get rtt 64B value p50 [all on cpu0]"), [])
paired = statistics.median(g / p for p, g in zip(pings, gets)) if pings and len(pings) == len(gets) else None
bset = med("beacond", "Set -> Watch changes received/s by 1 watcher")
dset = med("dbus-broker", "PropertiesChanged received/s by 1 watcher")
bsetp = med("beacond", "Set -> Watch changes received/s by 1 watcher, Sets pipelined 1000")
bsete = med("beacond", "Set -> Watch changes received/s by 1 watcher, ephemeral")
bsetpe = med("beacond", "Set -> Watch changes received/s by 1 watcher, Sets pipelined 1000, ephemeral")
kib = med("beacond", f"RSS growth per Observe subscriber ({k} held)")
rawWatch = med("beacond", "Set -> raw Watch change p50 [all on cpu0]")
bound = med("beacond", "Set -> value in a Property bound with <~ p50 [all on cpu0]")
lost = sum(med("beacond", t) or 0 for t in ("Post 1->1 subs, lost", "Post 1->10 subs, lost"))
lostChanges = sum(
    med("beacond", "Set -> Watch changes lost" + mode) or 0
    for mode in ("", ", Sets pipelined 1000", ", ephemeral", ", Sets pipelined 1000, ephemeral")
)
def ratio(a, b):
    return a / b if a is not None and b else None
rows = [
    ("notifications 1->1, beacond / Redis PUBLISH", ratio(b11, r11), ">=", 1.0),
    ("notifications 1->1, beacond / dbus-broker signals", ratio(b11, d11), ">=", 5.0),
    ("notifications 1->10, beacond / Redis PUBLISH", ratio(b110, r110), ">=", 1.0),
    ("Get p50 pinned, beacond / Redis PING p50 pinned", ratio(bget, rping), "<=", 1.5),
    ("  the same, each Get paired with a PING just before it", paired, "<=", 1.5),
    # The goal names changes per second at a watcher, as the issue's own figures do (50x its 5k/s reference is
    # 250k/s, a 4 us round trip: below a bare Unix-socket echo, so no synchronous client reaches it). The rate is
    # taken with Sets pipelined (at most 1000 unanswered), each answered and checked; dbus-broker's is what sd-bus
    # allows, one synchronous set-property at a time. Synchronous Sets are an info row.
    ("Set->watcher, Sets pipelined 1000, beacond / dbus-broker PropertiesChanged", ratio(bsetp, dset), ">=", 50.0),
    (f"daemon KiB per subscriber ({k} held)", kib, "<=", 16.0),
    # Both from one Set by a raw client to the moment the value is seen, in alternating blocks of one run.
    ("Set->value p50 pinned, <~ bound remote property / raw Watch", ratio(bound, rawWatch), "<=", 1.2),
]
info = [
    ("(info) Set->watcher, synchronous Sets / dbus-broker", ratio(bset, dset)),
    ("(info) Set->watcher, ephemeral Sets / dbus-broker", ratio(bsete, dset)),
    ("(info) Set->watcher, ephemeral Sets pipelined 1000 / dbus-broker", ratio(bsetpe, dset)),
]
print(f"{'goal (medians of this run)':<72}  {'value':>8}  {'goal':>7}  met")
print("-" * 98)
for name, v, op, goal in rows:
    shown = "n/a" if v is None else f"{v:.2f}"
    met = "n/a" if v is None else ("yes" if (v >= goal if op == ">=" else v <= goal) else "NO")
    print(f"{name:<72}  {shown:>8}  {op}{goal:>5g}  {met}")
for name, v in info:
    print(f"{name:<72}  {'n/a' if v is None else f'{v:.2f}':>8}")
if lost:
    print(f"note: beacond notification tests lost {lost:.0f} messages (median sum): those rates are not comparable")
if lostChanges:
    print(f"note: beacond Set -> Watch tests lost {lostChanges:.0f} changes (median sum): those rates are not comparable")
EOF
