#!/usr/bin/env bash
# fleet-bench.sh — beacon-fleet's figures, in one run on one three-member etcd cluster on 127.0.0.1:
#   - a fleet Set on machine A until machine B's watcher has it, beside etcd's own put until a watch on another
#     gRPC connection has it (p50, p99);
#   - pipelined fleet Sets beside pipelined etcd puts of the same key and value sizes;
#   - beacond's idle PSS with a fleet configured and registered, and without one.
# Release builds throughout. Usage: Fleet/scripts/fleet-bench.sh [COUNT] [IN-FLIGHT]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
count=${1:-2000}
in_flight=${2:-32}

bin=$(SWIFT=${SWIFT:-swift} "$root/scripts/build-release.sh" beacond beaconctl)
swift build --package-path "$root/Fleet" -c release --product beacon-fleet >&2
swift build --package-path "$root/Fleet" -c release --product fleet-bench >&2
fleet_bin=$(swift build --package-path "$root/Fleet" -c release --show-bin-path)

work=$(mktemp -d /tmp/fleet-bench.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    "$here/etcd-cluster.sh" stop "$work/etcd" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
"$here/etcd-cluster.sh" start "$work/etcd" >&2
endpoints=$(cat "$work/etcd/endpoints")

start_machine() { # NAME FLEET(yes|no)
    local dir=$work/$1
    mkdir -p "$dir/run" "$dir/state" "$dir/config"
    local prefixes=()
    [[ $2 == yes ]] && prefixes=(--fleet-prefixes fleet)
    XDG_RUNTIME_DIR=$dir/run XDG_STATE_HOME=$dir/state XDG_CONFIG_HOME=$dir/config HOME=$dir \
        BEACON_LIFECYCLE_ENABLED=no "$bin/beacond" "${prefixes[@]}" >"$dir/beacond.log" 2>&1 &
    pids+=($!)
    echo $! >"$dir/beacond.pid"
    for _ in $(seq 100); do [[ -S $dir/run/beacon.sock ]] && break; sleep 0.05; done
    if [[ $2 == yes ]]; then
        BEACON_ADDRESS=unix:$dir/run/beacon.sock HOME=$dir BEACON_FLEET_PREFIXES=fleet \
            BEACON_FLEET_ENDPOINTS=$endpoints BEACON_FLEET_MACHINE=$1 "$fleet_bin/beacon-fleet" >"$dir/fleet.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 200); do
            BEACON_ADDRESS=unix:$dir/run/beacon.sock "$bin/beaconctl" status 2>/dev/null | grep -q "fleet.*: available" &&
                return 0
            sleep 0.05
        done
        echo "machine $1: the fleet did not become available" >&2
        exit 1
    fi
}
start_machine a yes
start_machine b yes
start_machine plain no

# Idle memory, before any traffic: the two daemons measured in the same moment, after the same settling.
sleep 3
pss() { awk '/^Pss:/ {print $2}' "/proc/$(cat "$work/$1/beacond.pid")/smaps_rollup"; }
idle="beacond idle PSS (KiB), before the runs: with a fleet configured and registered $(pss a); without a fleet $(pss plain)"

echo "beacon-fleet figures, $(date -u +%Y-%m-%d), etcd $(etcd --version | head -1 | awk '{print $3}'), $(nproc) cores"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, in clock ticks
declare -A before
for pid in "${pids[@]}" $(cat "$work"/etcd/member-*.pid); do before[$pid]=$(cpu "$pid"); done
"$fleet_bin/fleet-bench" "unix:$work/a/run/beacon.sock" "unix:$work/b/run/beacon.sock" "$endpoints" "$count" "$in_flight"
echo "$idle"
# Where the CPU went during both runs (the bench's own process is not counted).
ticks=$(getconf CLK_TCK)
line="CPU seconds during the runs:"
for pid in "${pids[@]}" $(cat "$work"/etcd/member-*.pid); do
    name=$(tr '\0' ' ' <"/proc/$pid/cmdline" | awk '{print $1}')
    line+=$(awk -v a="${before[$pid]}" -v b="$(cpu "$pid")" -v t="$ticks" -v n="${name##*/}" \
        'BEGIN { printf " %s %.2f;", n, (b - a) / t }')
done
echo "$line"
echo "etcd leader elections during the whole script: $(cat "$work"/etcd/member-*.log | grep -c 'elected leader' || true)"
