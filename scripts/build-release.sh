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
# The daemon's own code therefore carries no @exclusivity(unchecked): with this flag, removing every one of them
# changed no count (Get 3,868, pipelined Set 7,911). The libraries that other packages build without the flag keep
# theirs (VarlinkServer, BeaconEventLoop, BeaconClient), each with its count in a comment
# (Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
#
# --no-export-dynamic: SwiftPM links executables so that they export every symbol (tests may link against an
# executable's module); beacond exported ~9,800, which the dynamic linker and the libraries' own relocations
# look through at every start. Nothing loads symbols from the daemon by name. Idle VmRSS of the static daemon
# (scripts/ready-time.sh -n 10 -i 2, medians): 14.7 MiB with neither flag, 15.1 with the first alone (the code's
# layout moved), 14.2 with both.
#
# The idle daemon's memory is mostly its code, mapped by the kernel in 64 KiB blocks around each page that runs
# (fault-around), so what counts is how many blocks the code that runs is spread over (scripts/idle-memory.sh,
# static build, PSS of the daemon idle with one client: 14,618 KiB with the flags above alone):
# -use-ld=lld, -function-sections, --symbol-ordering-file=scripts/beacond.order: the toolchain's lld places the
#   functions that scripts/code-order.sh saw run (start-up, every kind of call, idling) side by side at the start
#   of the code, each in its own section (-function-sections; Swift otherwise puts a module's internal and private
#   functions in one section, which moves as one). Without it a Set and a Get made 5.2 MiB of the 6.7 MiB of code
#   resident. The standard library's static archives are not split this way, so their code moves in blocks.
#   Symbols that the list names and a build lacks are skipped, so a stale list costs memory, never correctness.
#   SwiftPM did not compile the objects again when only this -Xfrontend flag was added to an existing build
#   directory: after changing it, delete .build/*/release/*.build/*.o once.
# -z pack-relative-relocs: the 38,000 relative relocations of a position-independent executable in the compact
#   RELR form that glibc 2.36 reads (915 KiB of RELA entries, all read at each start, become 7 KiB).
# Together: 9,364 KiB.
# --script=scripts/beacond-text.ld: the functions without a symbol (LLVM's private ones, e.g. Swift's objectdestroy
#   of closure contexts: 2,200 in beacond, 54 KB), which the order list cannot name, gathered in one section before
#   .text. Spread among the code they came from, the few that run made 64 KiB blocks of cold code resident: with the
#   code start-up alone ran released (Sources/CMalloc/cold-text.c), the idle PSS with one client went from 7.9-9.1
#   to 6.8-7.4 MiB (scripts/idle-memory.sh, cold and warm page cache).
# libstdc++ and libgcc's unwinder linked from their static archives, with --static-swift-stdlib (with the standard
#   library shared, libswiftCore.so brings the shared libstdc++ anyway): of libstdc++ the Swift runtime uses a few
#   functions, but a shared library is mapped whole and its relocations are written at every start; linked in, the
#   functions that run are laid out with the daemon's own (scripts/beacond.order). The linker finds -lstdc++ (the
#   standard library's link) in .build/static-archives first, which holds only that archive. libsqlite3 stays a
#   shared library: Debian's security updates of SQLite must reach the daemon (lintian calls an embedded copy an
#   error), and linked in it saved under 130 KiB more (scripts/idle-memory.sh, Benchmarks/README.md).
set -eu
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
flags="-c release -Xswiftc -enforce-exclusivity=unchecked -Xlinker --no-export-dynamic"
flags="$flags -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections"
flags="$flags -Xlinker --symbol-ordering-file=$PWD/scripts/beacond.order -Xlinker --no-warn-symbol-ordering"
flags="$flags -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --script=$PWD/scripts/beacond-text.ld"
options=
products=
for argument in "$@"; do
    case "$argument" in
    -*) options="$options $argument" ;;
    *) products="$products $argument" ;;
    esac
done
case " $options " in
*" --static-swift-stdlib "*)
    CLANG=${CLANG:-$(dirname "$(command -v "$SWIFT")")/clang}
    [ -x "$CLANG" ] || CLANG=cc
    archive=$("$CLANG" -print-file-name=libstdc++.a)
    [ -f "$archive" ] || { echo "$0: $CLANG finds no libstdc++.a (libstdc++-12-dev)" >&2; exit 1; }
    mkdir -p .build/static-archives
    ln -sf "$archive" .build/static-archives/libstdc++.a
    flags="$flags -Xlinker -L$PWD/.build/static-archives -Xswiftc -Xclang-linker -Xswiftc -static-libgcc"
    ;;
esac
[ -n "$products" ] || { sed -n '5p' "$0" >&2; exit 2; }
for product in $products; do
    # shellcheck disable=SC2086
    "$SWIFT" build $flags $options --product "$product" >&2
done
# shellcheck disable=SC2086
"$SWIFT" build $flags $options --show-bin-path
