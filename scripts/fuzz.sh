#!/bin/bash
# (gold cannot link the fuzzer build: lld does.)
# Fuzzes the parsers that clients and files reach (Fuzz/beacon-fuzz) with libFuzzer and AddressSanitizer.
#
#   scripts/fuzz.sh [-t SECONDS | -n RUNS] [TARGET...]     targets: json call-view framing idl configuration settings schema-text
#
# Each target starts from its checked-in corpus (Tests/Fuzz/Corpus/TARGET) and keeps what it finds in
# .build-fuzz/corpus/TARGET. A crash leaves its input in .build-fuzz/crashes/TARGET and fails the run; add such an
# input to the checked-in corpus once it is fixed, so that `make test` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=60
RUNS=
while getopts "t:n:" option; do
	case "$option" in
	t) SECONDS_PER_TARGET=$OPTARG ;;
	n) RUNS=$OPTARG ;;
	*) sed -n '4p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(json call-view framing idl configuration settings schema-text)

SCRATCH=.build-fuzz
swift build --product beacon-fuzz -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld \
	--scratch-path "$SCRATCH" >&2
FUZZER=$SCRATCH/release/beacon-fuzz
status=0
for target in "${TARGETS[@]}"; do
	[ -d "Tests/Fuzz/Corpus/$target" ] || { echo "fuzz.sh: no target $target" >&2; exit 2; }
	mkdir -p "$SCRATCH/corpus/$target" "$SCRATCH/crashes/$target"
	if [ -n "$RUNS" ]; then limit=(-runs="$RUNS"); else limit=(-max_total_time="$SECONDS_PER_TARGET"); fi
	log=$SCRATCH/fuzz-$target.log
	if BEACON_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0 "$FUZZER" "${limit[@]}" -print_final_stats=1 \
		-max_len=65536 -artifact_prefix="$SCRATCH/crashes/$target/" \
		"$SCRATCH/corpus/$target" "Tests/Fuzz/Corpus/$target" >"$log" 2>&1; then
		result=ok
	else
		result="FAILED (see $log and $SCRATCH/crashes/$target)"
		status=1
	fi
	runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
	seconds=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
	echo "$target: ${runs:-0} executions, ${seconds:-0}/s, corpus $(ls "$SCRATCH/corpus/$target" | wc -l) inputs: $result"
done
exit $status
