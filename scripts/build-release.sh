#!/bin/sh
# Builds release products with the flags of every release build of Beacon (make install-user, the bus benchmark,
# the instruction counts), then prints the directory that holds the binaries.
#
# usage: scripts/build-release.sh [SWIFT BUILD FLAG...] PRODUCT...
#   e.g. scripts/build-release.sh --static-swift-stdlib beacond beaconctl
# Arguments that start with - are flags, the others products: give a flag's value after =, as in --jobs=2.
#
# -enforce-exclusivity=unchecked: Swift checks at run time, on every access to a class's stored property or a
# global, that no other access to it overlaps. On the daemon's event loop these checks (in SwiftNIO and in our
# own code) were 27% of the instructions of a Get round trip (17,351 -> 12,753, scripts/callgrind-ops.sh) and
# moved the pinned Get p50 from 1.43x to 1.37x Redis PING. The debug builds that `make test` runs keep every
# check, so an overlapping access is still caught by the tests; the compiler's static checks stay on in both.
#
# --no-export-dynamic: SwiftPM links executables so that they export every symbol (tests may link against an
# executable's module); beacond exported ~9,800, which the dynamic linker and the libraries' own relocations
# look through at every start. Nothing loads symbols from the daemon by name. Idle VmRSS of the static daemon
# (scripts/ready-time.sh -n 10 -i 2, medians): 14.7 MiB with neither flag, 15.1 with the first alone (the code's
# layout moved), 14.2 with both.
set -eu
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
flags="-c release -Xswiftc -enforce-exclusivity=unchecked -Xlinker --no-export-dynamic"
options=
products=
for argument in "$@"; do
    case "$argument" in
    -*) options="$options $argument" ;;
    *) products="$products $argument" ;;
    esac
done
[ -n "$products" ] || { sed -n '5p' "$0" >&2; exit 2; }
for product in $products; do
    # shellcheck disable=SC2086
    "$SWIFT" build $flags $options --product "$product" >&2
done
# shellcheck disable=SC2086
"$SWIFT" build $flags $options --show-bin-path
