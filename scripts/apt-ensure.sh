#!/bin/sh
# Installs the Debian packages named as arguments that are not installed yet, with apt-get (as root, or through
# sudo), as the Makefile's apt-deps target does for the build's own packages.
#
# usage: scripts/apt-ensure.sh PACKAGE...
set -eu
missing=
for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
done
[ -n "$missing" ] || exit 0
echo "installing:$missing" >&2
sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
# shellcheck disable=SC2086
$sudo apt-get update -qq >&2
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >&2
