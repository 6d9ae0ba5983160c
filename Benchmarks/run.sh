#!/bin/sh
# Runs the Signals benchmarks (release build) and prints one table: nanoseconds and allocations
# per operation for Signals, OpenCombine and a plain closure call, with each goal ratio and
# whether it is met. Extra arguments go to `swift package benchmark` (e.g. `--filter 'send.*'`).
set -eu
cd "$(dirname "$0")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
swift package --disable-sandbox benchmark --target SignalsBenchmarks --no-progress \
    --format influx --path "$out" "$@" >"$out/log" 2>&1 || { cat "$out/log"; exit 1; }
python3 table.py "$out"
