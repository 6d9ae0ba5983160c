#!/bin/bash
# Times and profiles a loop of Signals' observe + dispose (a PassthroughSubject<Int>, observeNext, dispose), the
# case of `make bench-signals` that has no faster peer inside the benchmark to compare with: a release build of a
# throwaway package that depends on this checkout, pinned to CPU 0, then `perf record` and the functions above 1.5%.
#   scripts/profile-observe-dispose.sh [ITERATIONS]     (default 5,000,000)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
iterations=${1:-5000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Sources/observe-dispose"
cat >"$work/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "observe-dispose",
    dependencies: [.package(path: "$root")],
    targets: [
        .executableTarget(name: "observe-dispose", dependencies: [.product(name: "Signals", package: "$(basename "$root")")])
    ]
)
SWIFT
cat >"$work/Sources/observe-dispose/main.swift" <<'SWIFT'
import Signals

@inline(never) func consume(_ value: Int) { if value == -1 { print(value) } }

let subject = PassthroughSubject<Int>()
let iterations = Int(CommandLine.arguments.dropFirst().first ?? "5000000")!
let clock = ContinuousClock()
let start = clock.now
for _ in 0..<iterations { subject.observeNext { consume($0) }.dispose() }
let elapsed = clock.now - start
let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
print("observe + dispose: \(nanoseconds / Double(iterations)) ns per operation")
SWIFT
swift build -c release --package-path "$work" >/dev/null
binary="$work/.build/release/observe-dispose"
for _ in 1 2 3; do taskset -c 0 "$binary" "$iterations"; done
perf record -q -o "$work/perf.data" taskset -c 0 "$binary" "$iterations" >/dev/null
perf report -i "$work/perf.data" --no-children --percent-limit 1.5 --stdio 2>/dev/null | grep -E '^ +[0-9]'
