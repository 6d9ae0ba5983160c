#!/bin/bash
# Instructions per send of a PassthroughSubject<Int> to 10 observers, counted by valgrind's callgrind, at each
# revision given (default: the work tree): a release build of a throwaway package that depends on a checkout of the
# revision, run at two lengths; the difference of the totals divided by the extra sends removes start-up. Unlike
# the nanoseconds of `make bench-signals`, which on a 2-vCPU VM move by half between two runs of one binary, the
# count is the same at every run, so it tells whether the code changed.
#   scripts/signals-send-instructions.sh [REV...]      e.g. scripts/signals-send-instructions.sh bb4795f HEAD
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'git -C "$root" worktree prune; rm -rf "$work"' EXIT
count() {
	local source=$1 name=$2
	mkdir -p "$work/$name/Sources/send10"
	cat >"$work/$name/Package.swift" <<-SWIFT
		// swift-tools-version:6.0
		import PackageDescription
		let package = Package(
		    name: "send10",
		    dependencies: [.package(path: "$source")],
		    targets: [
		        .executableTarget(
		            name: "send10", dependencies: [.product(name: "Signals", package: "$(basename "$source")")])
		    ]
		)
	SWIFT
	cat >"$work/$name/Sources/send10/main.swift" <<-'SWIFT'
		import Signals

		@inline(never) func consume(_ value: Int) { if value == -1 { print(value) } }

		let subject = PassthroughSubject<Int>()
		let disposables = (0..<10).map { _ in subject.observeNext { consume($0) } }
		let iterations = Int(CommandLine.arguments.dropFirst().first ?? "100000")!
		for index in 0..<iterations { subject.send(index) }
		withExtendedLifetime(disposables) {}
	SWIFT
	swift build -c release --package-path "$work/$name" >"$work/$name.log" 2>&1 || {
		cat "$work/$name.log" >&2
		exit 1
	}
	local binary="$work/$name/.build/release/send10" totals=()
	for n in 100000 200000; do
		valgrind --tool=callgrind --callgrind-out-file="$work/$name.$n" "$binary" "$n" >/dev/null 2>&1
		totals+=("$(awk '/^totals:/ {print $2}' "$work/$name.$n")")
	done
	echo "$name: $(((totals[1] - totals[0]) / 100000)) instructions per send to 10 observers"
}
if [ $# -eq 0 ]; then
	count "$root" "work-tree"
fi
for revision in "$@"; do
	git -C "$root" worktree add -f --detach "$work/src-$revision" "$revision" -q
	count "$work/src-$revision" "$revision"
done
