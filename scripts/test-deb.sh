#!/bin/sh
# Builds the Debian packages beacon and beacon-fleet and tests them on this machine: lintian (no errors), dpkg -i,
# the installed user units (systemd-analyze verify), the man pages (man -l), the installed beacond socket-activated
# with beaconctl against it and the installed beacon-fleet mirroring a key of it to a three-member etcd cluster,
# then dpkg --purge, after which nothing the packages installed or their scripts created may be left.
#
# Needs root or password-less sudo (it installs and purges the packages); without them it says so and exits 0.
# When beacon or beacon-fleet is already installed, it builds and lints the packages and skips the rest with a line
# saying so: it never replaces or removes a package it did not install.
# Installs what it needs with apt-get (dpkg-dev, debhelper, lintian, man-db, systemd, bash-completion, etcd).
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
# SIGTERM to the process $2, named $1, which must then exit with status 0; else its log $3 is shown.
stop_cleanly() {
    kill -TERM "$2"
    code=0
    wait "$2" || code=$?
    [ "$code" = 0 ] || {
        cat "$3" >&2
        fail "$1 exited with status $code after SIGTERM"
    }
}

scripts/apt-ensure.sh dpkg-dev debhelper lintian man-db systemd bash-completion etcd-server etcd-client

packages="beacon-fleet beacon"
# Whether dpkg has package $1 in any state but "not installed" (installed, half-installed, config files left).
known() {
    state=$(dpkg-query -W -f='${Status}' "$1" 2> /dev/null) || return 1
    case "$state" in *not-installed) return 1 ;; esac
}
# Purges every package of the two that dpkg knows (beacon-fleet first: it depends on beacon).
purge() {
    for package in $packages; do
        ! known "$package" || $sudo dpkg --purge "$package" || return 1
    done
}

work=$(mktemp -d)
chmod 0700 "$work"
daemon=
fleet=
cluster=
cleanup() {
    [ -z "$fleet" ] || kill "$fleet" 2> /dev/null || true
    [ -z "$daemon" ] || kill "$daemon" 2> /dev/null || true
    [ -z "$cluster" ] || Fleet/scripts/etcd-cluster.sh stop "$cluster" > /dev/null 2>&1 || true
    purge > /dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# Build.
step "building the packages"
debs=$(scripts/deb.sh 2> "$work/build.log") || {
    tail -n 40 "$work/build.log" >&2
    fail "scripts/deb.sh"
}
built=$(date +%s)
for deb in $debs; do
    step "built $deb ($(stat -c %s "$deb") bytes)"
done
step "built in $((built - started)) s"
[ "$(echo "$debs" | wc -l)" = 2 ] || fail "scripts/deb.sh printed $(echo "$debs" | wc -l) packages, not 2"

# lintian: errors fail the test; warnings are shown (it also warns that it runs as root, which is harmless here).
code=0
# shellcheck disable=SC2086 # one path per line, no spaces
lintian --fail-on error $debs > "$work/lintian.log" 2>&1 || code=$?
grep -v 'running with root privileges' "$work/lintian.log" >&2 || true
[ "$code" = 0 ] || fail "lintian reports errors"
linted=$(date +%s)
step "lintian: no errors ($((linted - built)) s)"

# What the system holds before: every path outside the volatile places, and dpkg's knowledge of the package.
snapshot() {
    find /etc /usr /opt /var -xdev \( -path /var/cache -o -path /var/log -o -path /var/tmp -o -path /var/lib/apt \
        -o -path /var/lib/dpkg -o -path /var/backups -o -path /var/spool -o -path /var/mail \) -prune -o -print |
        sort
    ls -d /var/lib/dpkg/info/beacon.* /var/lib/dpkg/info/beacon-fleet.* 2> /dev/null || true
}
# A package installed before the test is the machine's, not the test's: it is neither replaced nor removed.
for package in $packages; do
    if known "$package"; then
        echo "test-deb: SKIPPED installing: the $package package is installed on this machine and make test" \
            "replaces no package it did not install; the packages were built and linted (dpkg --purge" \
            "beacon-fleet beacon, then make test-deb, to test them installed)" >&2
        # Nothing of the test's may touch the machine's package on the way out.
        packages=
        exit 0
    fi
done
snapshot > "$work/before"

# Install.
# shellcheck disable=SC2086 # one path per line, no spaces
$sudo dpkg -i $debs > "$work/dpkg-i.log" 2>&1 || {
    cat "$work/dpkg-i.log" >&2
    fail "dpkg -i"
}
dpkg-query -L beacon beacon-fleet > "$work/files"
for path in /usr/bin/beacond /usr/bin/beaconctl /usr/lib/systemd/user/beacon.socket \
    /usr/lib/systemd/user/beacon.service /usr/share/man/man1/beacond.1.gz /usr/share/man/man1/beaconctl.1.gz \
    /usr/share/man/man1/beaconctl.get.1.gz /usr/share/bash-completion/completions/beaconctl \
    /usr/share/zsh/vendor-completions/_beaconctl /usr/share/fish/vendor_completions.d/beaconctl.fish \
    /usr/share/doc/beacon/beacond.json /usr/share/doc/beacon/README.md.gz /usr/share/doc/beacon/guide.md.gz \
    /usr/share/doc/beacon/copyright \
    /usr/share/doc/beacon/changelog.gz /usr/share/beacon/bridge.json /usr/bin/beacon-fleet /usr/lib/systemd/user/beacon-fleet.service \
    /usr/share/man/man1/beacon-fleet.1.gz /usr/share/doc/beacon-fleet/README.md \
    /usr/share/doc/beacon-fleet/copyright /usr/share/doc/beacon-fleet/changelog.gz; do
    grep -qx "$path" "$work/files" && [ -e "$path" ] || fail "$path is not installed"
done
grep -qx 'ExecStart=/usr/bin/beacond' /usr/lib/systemd/user/beacon.service ||
    fail "beacon.service does not run /usr/bin/beacond"
grep -qx 'Backlog=4096' /usr/lib/systemd/user/beacon.socket || fail "beacon.socket lost Backlog=4096"
grep -qx 'ExecStart=/usr/bin/beacon-fleet' /usr/lib/systemd/user/beacon-fleet.service ||
    fail "beacon-fleet.service does not run /usr/bin/beacon-fleet"
grep -qx 'After=beacon.socket' /usr/lib/systemd/user/beacon-fleet.service ||
    fail "beacon-fleet.service is not ordered after beacon.socket"
version=$(sed -n 's/^.*static let current = "\([^"]*\)".*$/\1/p' Sources/BeaconProtocol/BeaconVersion.swift)
[ "$(/usr/bin/beacon-fleet --version)" = "beacon-fleet $version" ] ||
    fail "beacon-fleet --version says $(/usr/bin/beacon-fleet --version), not beacon-fleet $version"
# postinst enabled the socket for every user (deb-systemd-helper --user, as dh_installsystemduser generates).
[ "$(readlink /etc/systemd/user/sockets.target.wants/beacon.socket)" = /usr/lib/systemd/user/beacon.socket ] ||
    fail "beacon.socket is not enabled in /etc/systemd/user/sockets.target.wants"
# beacon-fleet needs its configuration first: installing it enables nothing.
[ -z "$(find /etc/systemd/user -name 'beacon-fleet*' 2> /dev/null)" ] || fail "installing beacon-fleet enabled it"
step "installed $(wc -l < "$work/files") paths; beacon.socket enabled for users, beacon-fleet.service not"

# The installed units, as the user manager would load them (%t and %h need the user's directories).
mkdir -m 0700 "$work/run" "$work/state" "$work/config" "$work/home"
XDG_RUNTIME_DIR="$work/run" HOME="$work/home" systemd-analyze verify --user \
    /usr/lib/systemd/user/beacon.socket /usr/lib/systemd/user/beacon.service \
    /usr/lib/systemd/user/beacon-fleet.service > "$work/verify.log" 2>&1 || {
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
[ "$(man -w beacon-fleet)" = /usr/share/man/man1/beacon-fleet.1.gz ] || fail "man -w beacon-fleet"
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
# systemd-socket-activate execs the daemon in its own process at the first connection.
for field in "\"software\":\"$version\"" "\"pid\":$daemon," "\"store\":\"$work/state/beacon/store.sqlite\""; do
    case "$status" in *"$field"*) ;; *) fail "beaconctl status has no $field: $status" ;; esac
done
ctl status > /dev/null || fail "beaconctl status (text)"
step "socket-activated /usr/bin/beacond served set/get/status (version $version)"

# The installed beacon-fleet, registered with that beacond, mirrors a Set to a three-member etcd cluster.
cluster="$work/etcd"
Fleet/scripts/etcd-cluster.sh start "$cluster" > "$work/etcd.log" 2>&1 || {
    cat "$work/etcd.log" >&2
    fail "starting etcd"
}
endpoints=$(Fleet/scripts/etcd-cluster.sh endpoints "$cluster")
XDG_RUNTIME_DIR="$work/run" HOME="$work/home" XDG_CONFIG_HOME="$work/config" /usr/bin/beacon-fleet \
    --fleet-prefixes deb --fleet-endpoints "$endpoints" --fleet-machine deb-test > "$work/fleet.log" 2>&1 &
fleet=$!
# Registration is announced nowhere: Status is asked until the provider of deb.** says it is available (bounded).
tries=0
until ctl status | grep -q 'deb\.\*\* by .*: available$'; do
    tries=$((tries + 1))
    [ "$tries" -le 300 ] || {
        cat "$work/fleet.log" >&2
        fail "beacon-fleet did not become available within 30 s: $(ctl status)"
    }
    kill -0 "$fleet" 2> /dev/null || {
        cat "$work/fleet.log" >&2
        fail "beacon-fleet exited"
    }
    sleep 0.1
done
ctl set deb.fleet '"mirrored"' > /dev/null || fail "beaconctl set deb.fleet"
# The Set is answered once etcd committed it, so etcd has it now.
stored=$(ETCDCTL_API=3 etcdctl --endpoints "$endpoints" get /beacon/deb.fleet --print-value-only) ||
    fail "etcdctl get"
# etcd holds the value with its origin: {"origin":{...,"machine":"deb-test",...},"value":"mirrored"}.
case "$stored" in
    *'"machine":"deb-test"'*'"value":"mirrored"'*) ;;
    *) fail "etcd holds $stored under /beacon/deb.fleet, not the value \"mirrored\" from machine deb-test" ;;
esac
stop_cleanly beacon-fleet "$fleet" "$work/fleet.log"
fleet=
Fleet/scripts/etcd-cluster.sh stop "$cluster" > /dev/null 2>&1 || fail "stopping etcd"
cluster=
step "/usr/bin/beacon-fleet mirrored a Set of the installed beacond to etcd and stopped cleanly"

stop_cleanly beacond "$daemon" "$work/beacond.log"
daemon=
[ -f "$work/state/beacon/store.sqlite" ] || fail "no store in XDG_STATE_HOME"
step "/usr/bin/beacond stopped cleanly"

# Purge: every path the packages shipped or their scripts created is gone, dpkg knows nothing of them, and the
# user's store is where it was.
purge > "$work/purge.log" 2>&1 || {
    cat "$work/purge.log" >&2
    fail "dpkg --purge"
}
for package in $packages; do
    ! dpkg-query -W "$package" > /dev/null 2>&1 ||
        fail "dpkg still knows $package after purge: $(dpkg -l "$package" | tail -n 1)"
done
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
