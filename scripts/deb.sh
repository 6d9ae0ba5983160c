#!/bin/sh
# Builds the Debian packages beacon_VERSION_ARCH.deb and beacon-fleet_VERSION_ARCH.deb into build-deb/ and prints
# their paths, one per line.
#
# The version is BeaconVersion.current in Sources/BeaconProtocol/BeaconVersion.swift; debian/rules stops with a
# message when debian/changelog's version differs. The binaries are the release build of
# scripts/build-release.sh with the Swift standard library linked statically (what `make install-user` installs);
# beacon-fleet is the release build of Fleet/, also with the standard library linked statically.
#
# usage: scripts/deb.sh        (SWIFT=/path/to/swift to use another toolchain)
set -eu
cd "$(dirname "$0")/.."
scripts/apt-ensure.sh dpkg-dev debhelper
version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
rm -f "build-deb/beacon_${version}_${arch}.deb" "build-deb/beacon-fleet_${version}_${arch}.deb"
debian/rules clean >&2
debian/rules binary >&2
for package in beacon beacon-fleet; do
    deb="build-deb/${package}_${version}_${arch}.deb"
    [ -f "$deb" ] || { echo "deb.sh: $deb was not built" >&2; exit 1; }
    echo "$deb"
done
