#!/bin/bash
# The whole test suite under AddressSanitizer and under ThreadSanitizer, each in a build directory of its own
# (.build-asan, .build-tsan). The tests start the daemon and the CLI from the same build, so they run sanitized too.
#
#   scripts/test-sanitizers.sh [address|thread]...     (default: both)
#
# Suppressions live in scripts/sanitizers/, each with the reason beside it. Leak detection is off: every process
# that exits while a SwiftNIO event loop thread still runs (the daemon's, at exit()) is reported for the loop's own
# buffers, which nothing frees before the process ends; leaks of the daemon's memory while it runs are measured
# instead (scripts/hostile-clients.py, and the per-subscriber figure of make bench-bus).
set -euo pipefail
cd "$(dirname "$0")/.."
KINDS=("$@")
[ ${#KINDS[@]} -gt 0 ] || KINDS=(address thread)
python=${BEACON_TEST_PYTHON:-$PWD/.venv/bin/python3}
status=0
for kind in "${KINDS[@]}"; do
	case "$kind" in
	address) scratch=.build-asan ;;
	thread) scratch=.build-tsan ;;
	*) echo "test-sanitizers.sh: address or thread, not $kind" >&2; exit 2 ;;
	esac
	swift build --build-tests -Xswiftc -sanitize="$kind" --scratch-path "$scratch"
	log=$scratch/test.log
	if ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
		TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/sanitizers/tsan.supp" \
		BEACON_TEST_PYTHON=$python swift test --skip-build --scratch-path "$scratch" 2>&1 | tee "$log"; then
		echo "$kind: clean"
	else
		echo "$kind: FAILED (see $log)"
		status=1
	fi
done
exit $status
