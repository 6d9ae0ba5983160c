#!/bin/bash
# swift, with `swift build` run once more when the build tool itself crashed. On Linux, swift-build's libdispatch
# event loop now and then dies with a bad pointer in _dispatch_event_loop_drain while it talks to a build plugin's
# process (swiftlang/swift#87033); Beacon's targets run the VarlinkGenerator plugin on every build. A second run
# starts where the first stopped. Only that crash is retried: a compiler error fails at once, and `swift test` is
# never run twice.
#
# usage: scripts/swift.sh ARGUMENTS...   (the swift binary: $SWIFT_BINARY, else swift)
set -u
swift=${SWIFT_BINARY:-swift}
if [ "${1:-}" != build ]; then
    exec "$swift" "$@"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2; do
    "$swift" "$@" 2> >(tee "$log" >&2)
    status=$?
    wait
    if [ "$status" -eq 0 ] || ! grep -q '^\*\*\* Program crashed' "$log"; then
        exit "$status"
    fi
    [ "$attempt" -eq 1 ] && echo "scripts/swift.sh: swift build crashed; running it once more" >&2
done
exit "$status"
