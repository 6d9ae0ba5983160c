#!/bin/sh
# Builds the Debian package and tests it on this machine: lintian (no errors), dpkg -i, the installed user units
# (systemd-analyze verify), the installed beacond socket-activated with beaconctl against it, the man pages
# (man -l), then dpkg --purge, after which nothing the package installed or its scripts created may be left.
#
# Needs root or password-less sudo (it installs and purges a package); without them it says so and exits 0.
# Installs what it needs with apt-get (dpkg-dev, debhelper, lintian, man-db, systemd, bash-completion).
# `make test-deb` runs it; `make test` runs it after the Swift tests.
set -eu
cd "$(dirname "$0")/.."
started=$(date +%s)

if [ "$(id -u)" = 0 ]; then
    sudo=
elif command -v sudo > /dev/null 2>&1 && sudo -n true 2> /dev/null; then
    sudo=sudo
else
    echo "test-deb: SKIPPED: installing and purging the package needs root or password-less sudo" >&2
    exit 0
fi

step() { echo "test-deb: $*" >&2; }
fail() {
    echo "test-deb: FAILED: $*" >&2
    exit 1
}

scripts/apt-ensure.sh dpkg-dev debhelper lintian man-db systemd bash-completion

# Whether dpkg has the package in any state but "not installed" (installed, half-installed, config files left).
known() {
    state=$(dpkg-query -W -f='${Status}' beacon 2> /dev/null) || return 1
    case "$state" in *not-installed) return 1 ;; esac
}

work=$(mktemp -d)
chmod 0700 "$work"
daemon=
cleanup() {
    [ -z "$daemon" ] || kill "$daemon" 2> /dev/null || true
    ! known || $sudo dpkg --purge beacon > /dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# Build.
step "building the package"
deb=$(scripts/deb.sh 2> "$work/build.log") || {
    tail -n 40 "$work/build.log" >&2
    fail "scripts/deb.sh"
}
built=$(date +%s)
step "built $deb ($(stat -c %s "$deb") bytes) in $((built - started)) s"

# lintian: errors fail the test; warnings are shown (it also warns that it runs as root, which is harmless here).
code=0
lintian --fail-on error "$deb" > "$work/lintian.log" 2>&1 || code=$?
grep -v 'running with root privileges' "$work/lintian.log" >&2 || true
[ "$code" = 0 ] || fail "lintian reports errors"
linted=$(date +%s)
step "lintian: no errors ($((linted - built)) s)"

# What the system holds before: every path outside the volatile places, and dpkg's knowledge of the package.
snapshot() {
    find /etc /usr /opt /var -xdev \( -path /var/cache -o -path /var/log -o -path /var/tmp -o -path /var/lib/apt \
        -o -path /var/lib/dpkg -o -path /var/backups -o -path /var/spool -o -path /var/mail \) -prune -o -print |
        sort
    ls -d /var/lib/dpkg/info/beacon.* 2> /dev/null || true
}
if known; then
    step "purging the beacon package installed before the test"
    $sudo dpkg --purge beacon > /dev/null
fi
snapshot > "$work/before"

# Install.
$sudo dpkg -i "$deb" > "$work/dpkg-i.log" 2>&1 || {
    cat "$work/dpkg-i.log" >&2
    fail "dpkg -i"
}
dpkg-query -L beacon > "$work/files"
for path in /usr/bin/beacond /usr/bin/beaconctl /usr/lib/systemd/user/beacon.socket \
    /usr/lib/systemd/user/beacon.service /usr/share/man/man1/beacond.1.gz /usr/share/man/man1/beaconctl.1.gz \
    /usr/share/man/man1/beaconctl.get.1.gz /usr/share/bash-completion/completions/beaconctl \
    /usr/share/zsh/vendor-completions/_beaconctl /usr/share/fish/vendor_completions.d/beaconctl.fish \
    /usr/share/doc/beacon/beacond.json /usr/share/doc/beacon/README.md.gz /usr/share/doc/beacon/copyright \
    /usr/share/doc/beacon/changelog.gz; do
    grep -qx "$path" "$work/files" && [ -e "$path" ] || fail "$path is not installed"
done
grep -qx 'ExecStart=/usr/bin/beacond' /usr/lib/systemd/user/beacon.service ||
    fail "beacon.service does not run /usr/bin/beacond"
grep -qx 'Backlog=4096' /usr/lib/systemd/user/beacon.socket || fail "beacon.socket lost Backlog=4096"
# postinst enabled the socket for every user (deb-systemd-helper --user, as dh_installsystemduser generates).
[ "$(readlink /etc/systemd/user/sockets.target.wants/beacon.socket)" = /usr/lib/systemd/user/beacon.socket ] ||
    fail "beacon.socket is not enabled in /etc/systemd/user/sockets.target.wants"
step "installed $(wc -l < "$work/files") paths; beacon.socket enabled for users"

# The installed units, as the user manager would load them (%t and %h need the user's directories).
mkdir -m 0700 "$work/run" "$work/state" "$work/config" "$work/home"
XDG_RUNTIME_DIR="$work/run" HOME="$work/home" systemd-analyze verify --user \
    /usr/lib/systemd/user/beacon.socket /usr/lib/systemd/user/beacon.service > "$work/verify.log" 2>&1 || {
    cat "$work/verify.log" >&2
    fail "systemd-analyze verify --user"
}
[ ! -s "$work/verify.log" ] || {
    cat "$work/verify.log" >&2
    fail "systemd-analyze verify --user printed warnings"
}
step "systemd-analyze verify --user: clean"

# Man pages: each renders without a groff warning, and man finds the installed ones by name.
for page in $(grep '^/usr/share/man/' "$work/files" | grep '\.gz$'); do
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 > /dev/null) ||
        fail "man -l $page"
    [ -z "$warnings" ] || fail "man -l $page: $warnings"
    LC_ALL=C.UTF-8 man -l "$page" 2> /dev/null | grep -q . || fail "man -l $page printed nothing"
done
[ "$(man -w beacond)" = /usr/share/man/man1/beacond.1.gz ] || fail "man -w beacond"
[ "$(man -w beaconctl.get)" = /usr/share/man/man1/beaconctl.get.1.gz ] || fail "man -w beaconctl.get"
step "man pages: $(grep -c '^/usr/share/man/.*\.gz$' "$work/files") render without warnings"

# The bash completion loads and completes subcommands.
bash -c '. /usr/share/bash-completion/bash_completion; . /usr/share/bash-completion/completions/beaconctl;
    complete -p beaconctl' > /dev/null 2>&1 || fail "the bash completion does not load"

# The installed daemon, socket-activated, with private directories; beaconctl against it.
socket="$work/run/beacon.sock"
systemd-socket-activate -l "$socket" -E XDG_RUNTIME_DIR="$work/run" -E XDG_STATE_HOME="$work/state" \
    -E XDG_CONFIG_HOME="$work/config" -E HOME="$work/home" -E BEACON_LIFECYCLE_ENABLED=no \
    /usr/bin/beacond > "$work/beacond.log" 2>&1 &
daemon=$!
tries=0
until [ -S "$socket" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 100 ] || fail "no socket at $socket"
    sleep 0.1
done
ctl() {
    command=$1
    shift
    /usr/bin/beaconctl "$command" --address "unix:$socket" --timeout 10 "$@"
}
ctl set test.deb '"packaged"' > /dev/null || fail "beaconctl set"
[ "$(ctl get test.deb)" = '"packaged"' ] || fail "beaconctl get returned $(ctl get test.deb)"
status=$(ctl status --json) || fail "beaconctl status"
version=$(sed -n 's/^.*static let current = "\([^"]*\)".*$/\1/p' Sources/BeaconProtocol/BeaconVersion.swift)
# systemd-socket-activate execs the daemon in its own process at the first connection.
for field in "\"software\":\"$version\"" "\"pid\":$daemon," "\"store\":\"$work/state/beacon/store.sqlite\""; do
    case "$status" in *"$field"*) ;; *) fail "beaconctl status has no $field: $status" ;; esac
done
ctl status > /dev/null || fail "beaconctl status (text)"
kill -TERM "$daemon"
code=0
wait "$daemon" || code=$?
daemon=
[ "$code" = 0 ] || {
    cat "$work/beacond.log" >&2
    fail "beacond exited with status $code after SIGTERM"
}
[ -f "$work/state/beacon/store.sqlite" ] || fail "no store in XDG_STATE_HOME"
step "socket-activated /usr/bin/beacond served set/get/status (version $version) and stopped cleanly"

# Purge: every path the package shipped or its scripts created is gone, dpkg knows nothing of it, and the user's
# store is where it was.
$sudo dpkg --purge beacon > "$work/purge.log" 2>&1 || {
    cat "$work/purge.log" >&2
    fail "dpkg --purge"
}
! dpkg-query -W beacon > /dev/null 2>&1 || fail "dpkg still knows beacon after purge: $(dpkg -l beacon | tail -n 1)"
snapshot > "$work/after"
if ! cmp -s "$work/before" "$work/after"; then
    diff "$work/before" "$work/after" >&2 || true
    fail "the system differs after dpkg --purge from before dpkg -i"
fi
while read -r path; do
    [ -d "$path" ] || [ ! -e "$path" ] || fail "$path is left after purge"
done < "$work/files"
[ -f "$work/state/beacon/store.sqlite" ] || fail "the user's store went with the package"
step "purged: nothing left outside the user's state"

step "passed in $(($(date +%s) - started)) s (package build $((built - started)) s, lintian $((linted - built)) s)"
