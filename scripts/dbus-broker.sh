# Sourced by the scripts that measure beacond beside dbus-broker: starts dbus-broker as the bus benchmark runs it
# (ANCHORS/broker-ns.sh: a private mount namespace and socket activation).
#   . scripts/dbus-broker.sh; start_dbus_broker DIR ANCHORS
# returns 1 (and starts nothing) without dbus-broker or the anchors; else sets BROKER_SOCKET, BROKER_PID (the broker)
# and BROKER_LAUNCHER_PID (its launcher), and appends them and the journal sink's pid to the PIDS array for the
# caller's cleanup. Needs root for the namespace.
start_dbus_broker() {
	local dir=$1 anchors=$2
	[ -f "$anchors/broker-ns.sh" ] && command -v dbus-broker-launch >/dev/null || return 1
	gcc -O2 -o "$dir/jsink" "$anchors/jsink.c" 2>/dev/null || return 1
	BROKER_SOCKET=$dir/broker.sock
	unshare -m sh "$anchors/broker-ns.sh" "$BROKER_SOCKET" "$dir/jsink" "$dir/broker.journal" \
		"$dir/jsink.pid" "$anchors/bus.conf" >"$dir/broker.log" 2>&1 &
	BROKER_LAUNCHER_PID=$!
	PIDS+=("$BROKER_LAUNCHER_PID")
	local i
	for i in $(seq 200); do [ -S "$BROKER_SOCKET" ] && break; sleep 0.05; done
	[ -S "$BROKER_SOCKET" ] || { echo "dbus-broker's socket did not appear: $(cat "$dir/broker.log")" >&2; exit 1; }
	# broker-ns.sh starts the journal sink, and writes its pid, before it makes the socket.
	PIDS+=("$(cat "$dir/jsink.pid")")
	# The launcher starts the broker on the first connection.
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$BROKER_SOCKET"
	BROKER_PID=
	for i in $(seq 100); do
		BROKER_PID=$(pgrep -P "$BROKER_LAUNCHER_PID" -x dbus-broker || true)
		[ -n "$BROKER_PID" ] && break
		sleep 0.05
	done
	[ -n "$BROKER_PID" ] || { echo "dbus-broker did not start: $(cat "$dir/broker.log")" >&2; exit 1; }
	PIDS+=("$BROKER_PID")
}
