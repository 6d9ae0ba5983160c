#!/bin/bash
# Runs the tests matching FILTER (default ClientIntegrationTests) RUNS times (default 40) from the current debug
# build while two busy loops keep both cores loaded, and reports each failure's first lines. Timing races that a
# quiet machine hides show up here; build first with `swift build --build-tests`.
#   scripts/stress-tests.sh [RUNS] [FILTER]
set -u
cd "$(dirname "$0")/.."
runs=${1:-40}
filter=${2:-ClientIntegrationTests}
python=${BEACON_TEST_PYTHON:-$PWD/.venv/bin/python3}
out=$(mktemp -d)
yes >/dev/null &
load1=$!
yes >/dev/null &
load2=$!
trap 'kill $load1 $load2 2>/dev/null; rm -rf "$out"' EXIT
passed=0
failed=0
for run in $(seq 1 "$runs"); do
    if BEACON_TEST_PYTHON=$python timeout 300 swift test --skip-build --filter "$filter" >"$out/log" 2>&1; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "run $run failed:"
        grep -E "✘|timed out" "$out/log" | head -8
    fi
done
echo "$filter under load: $passed of $runs runs passed, $failed failed"
[ "$failed" -eq 0 ]
