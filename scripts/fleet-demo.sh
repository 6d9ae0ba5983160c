#!/usr/bin/env bash
# fleet-demo.sh — two machines sharing fleet.** through a three-member etcd on 127.0.0.1, on one host: the
# recipe of `docs/guide.md`'s "Try the fleet on one machine", run from start to end, and everything it started
# stopped again (also on failure or Ctrl-C).
#
# Each "machine" is a beacond with its own socket and store, and a beacon-fleet that finds it through the same
# address (BEACON_ADDRESS) and names itself with its own fleet.machine; on one host the names must differ.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}

"$SWIFT" build --product beacond >&2
"$SWIFT" build --product beaconctl >&2
"$SWIFT" build --package-path Fleet --product beacon-fleet >&2
bin=$("$SWIFT" build --show-bin-path)
fleet_bin=$("$SWIFT" build --package-path Fleet --show-bin-path)

demo=$(mktemp -d /tmp/beacon-fleet-demo.XXXXXX)
pids=()
stop() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    bash Fleet/scripts/etcd-cluster.sh stop "$demo/etcd" >/dev/null 2>&1 || true
    [[ -n ${FLEET_DEMO_KEEP:-} ]] || rm -rf "$demo"
}
trap stop EXIT

# 1. A three-member etcd on 127.0.0.1 (free ports picked for it).
mkdir -p "$demo/etcd"
bash Fleet/scripts/etcd-cluster.sh start "$demo/etcd"
endpoints=$(bash Fleet/scripts/etcd-cluster.sh endpoints "$demo/etcd")
echo "etcd: $endpoints"

# 2. Two machines, a and b: each a beacond claiming fleet.** and its beacon-fleet.
for machine in a b; do
    mkdir -m 0700 -p "$demo/$machine"
    export BEACON_ADDRESS="unix:$demo/$machine/beacon.sock"
    "$bin/beacond" --store-path "$demo/$machine/store.sqlite" --fleet-prefixes fleet \
        >"$demo/$machine/beacond.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do [[ -S $demo/$machine/beacon.sock ]] && break; sleep 0.05; done
    "$bin/beaconctl" status >/dev/null
    BEACON_FLEET_ENDPOINTS=$endpoints BEACON_FLEET_MACHINE=$machine \
        "$fleet_bin/beacon-fleet" --fleet-prefixes fleet >"$demo/$machine/fleet.log" 2>&1 &
    pids+=($!)
done

# 3. A watcher on b, a write on a (it waits for a's beacon-fleet to be ready, up to fleet.requestTimeoutMs). With
# --initial the watcher prints the value even if the write came first.
BEACON_ADDRESS="unix:$demo/b/beacon.sock" "$bin/beaconctl" watch --initial --limit 1 --timeout 20 'fleet.**' \
    >"$demo/seen-on-b" &
watcher=$!
BEACON_ADDRESS="unix:$demo/a/beacon.sock" "$bin/beaconctl" set fleet.kiosk.message '"Closed for lunch"'
wait "$watcher"
echo "b saw: $(cat "$demo/seen-on-b")"
BEACON_ADDRESS="unix:$demo/b/beacon.sock" "$bin/beaconctl" get fleet.kiosk.message
