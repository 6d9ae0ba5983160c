#!/bin/sh
# Starts dbus-broker on a private socket on a machine where systemd is not PID 1 (a container, a CI runner).
#
#   sh dbus-broker-ns.sh SOCKET CONFIG SINK JOURNAL SINK_PIDFILE
#
#   SOCKET        path of the bus socket to create (the bus address is unix:path=SOCKET)
#   CONFIG        bus configuration for dbus-broker-launch (bus-policy.conf)
#   SINK          a built unix_peer (unix_peer.c); its "sink" mode plays journald
#   JOURNAL       file that receives the log records the launcher and the broker send to the journal
#   SINK_PIDFILE  file that receives the pid of the sink process, for the caller to end it
#
# Needs root (a mount namespace). Runs in the foreground: every step execs the next, so the pid the caller
# started ends up as dbus-broker-launch, whose child dbus-broker appears on the first connection to SOCKET.
# Killing that pid and the sink's stops it all.
#
# dbus-broker itself only serves a controller over an inherited socket; the controller is dbus-broker-launch,
# which wants three things systemd would give it:
#   1. the journal socket /run/systemd/journal/socket, which it connects to at start-up (it exits without it).
#      In a private mount namespace a tmpfs goes over /run/systemd and the sink binds that path, so the
#      host's /run is not touched;
#   2. its listening socket passed in by socket activation (LISTEN_FDS): systemd-socket-activate makes it and
#      execs the launcher on the first connection;
#   3. the address of its own bus, to which it connects back as a client through sd_bus_open_user(): passed
#      as DBUS_SESSION_BUS_ADDRESS, which systemd-socket-activate hands on only when given with -E.
set -eu

if [ $# -ne 5 ]; then
	echo "usage: sh dbus-broker-ns.sh SOCKET CONFIG SINK JOURNAL SINK_PIDFILE" >&2
	exit 2
fi

# First pass: enter a private mount namespace and run this script again inside it.
if [ "${BEACON_PEERS_MOUNT_NS:-}" != 1 ]; then
	exec unshare --mount --propagation private env BEACON_PEERS_MOUNT_NS=1 sh "$0" "$@"
fi

socket=$1 config=$2 sink=$3 journal=$4 sink_pidfile=$5
journal_socket=/run/systemd/journal/socket

[ -d /run/systemd ] || mkdir -p /run/systemd
mount -t tmpfs -o mode=0755 beacon-peers-journal /run/systemd
mkdir -p /run/systemd/journal

"$sink" sink "$journal_socket" "$journal" &
echo $! >"$sink_pidfile"
tries=0
while [ ! -S "$journal_socket" ]; do
	tries=$((tries + 1))
	if [ "$tries" -gt 100 ]; then
		echo "dbus-broker-ns.sh: the journal sink did not bind $journal_socket" >&2
		exit 1
	fi
	sleep 0.02
done

rm -f "$socket"
exec systemd-socket-activate --listen="$socket" --setenv=DBUS_SESSION_BUS_ADDRESS="unix:path=$socket" \
	dbus-broker-launch --scope user --config-file="$config"
