#!/bin/bash
# Beacon's costs at many keys beside redis-server on the same keys and values, in one run: memory per key, exec ->
# first answer of a restarted server, and List of a 100-key prefix, with the goals of issue "A million keys"
# (scripts/scale-bench.py says how each is measured).
# usage: scripts/scale-bench.sh [SIZE...]     (default: 1000 10000 100000; add 1000000 for the goal's size)
# Needs redis-server and redis-cli (redis-server, redis-tools).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/apt-ensure.sh" redis-server redis-tools
BEACOND=$("$ROOT/scripts/build-release.sh" beacond)/beacond
PYTHONPATH="$ROOT/scripts" exec python3 "$ROOT/scripts/scale-bench.py" "$BEACOND" "$@"
