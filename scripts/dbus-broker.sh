# Sourced by the scripts that measure beacond beside dbus-broker: starts dbus-broker as the bus benchmark runs it
# (Benchmarks/Peers/dbus-broker-ns.sh: a private mount namespace and socket activation).
#   . scripts/dbus-broker.sh; start_dbus_broker DIR PEERS
# PEERS is the Benchmarks/Peers directory. Returns 1 (and starts nothing) without dbus-broker or PEERS; else sets BROKER_SOCKET, BROKER_PID (the broker)
# and BROKER_LAUNCHER_PID (its launcher), and appends them and the journal sink's pid to the PIDS array for the
# caller's cleanup. Needs root for the namespace.
start_dbus_broker() {
	local dir=$1 peers=$2
	[ -f "$peers/dbus-broker-ns.sh" ] && command -v dbus-broker-launch >/dev/null || return 1
	gcc -std=c11 -O2 -o "$dir/unix_peer" "$peers/unix_peer.c" 2>/dev/null || return 1
	BROKER_SOCKET=$dir/broker.sock
	# dbus-broker-ns.sh enters its own mount namespace; every step execs the next, so $! becomes the launcher.
	sh "$peers/dbus-broker-ns.sh" "$BROKER_SOCKET" "$peers/bus-policy.conf" "$dir/unix_peer" \
		"$dir/broker.journal" "$dir/jsink.pid" >"$dir/broker.log" 2>&1 &
	BROKER_LAUNCHER_PID=$!
	PIDS+=("$BROKER_LAUNCHER_PID")
	local i
	for i in $(seq 200); do [ -S "$BROKER_SOCKET" ] && break; sleep 0.05; done
	[ -S "$BROKER_SOCKET" ] || { echo "dbus-broker's socket did not appear: $(cat "$dir/broker.log")" >&2; exit 1; }
	# dbus-broker-ns.sh starts the journal sink, and writes its pid, before it makes the socket.
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
