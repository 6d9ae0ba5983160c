# Sourced by the scripts that measure a daemon of their own (callgrind-ops.sh, burst-cost.sh).
#
# bench_daemon_env PARENT: makes a fresh directory under PARENT (run.XXXXXX) holding the daemon's runtime, state and
# configuration directories, and sets DAEMON_DIR, DAEMON_SOCKET and DAEMON_ENV, the daemon's environment as an
# array of VAR=VALUE: those directories, the socket's address, the bus benchmark's queue limit, warnings only, and
# a system bus that does not exist (the lifecycle bridge finds none and stays quiet).
bench_daemon_env() {
	DAEMON_DIR=$(mktemp -d "$1/run.XXXXXX")
	mkdir -m 700 "$DAEMON_DIR/run" "$DAEMON_DIR/state" "$DAEMON_DIR/config"
	DAEMON_SOCKET=$DAEMON_DIR/run/beacon.sock
	DAEMON_ENV=(
		XDG_RUNTIME_DIR="$DAEMON_DIR/run" XDG_STATE_HOME="$DAEMON_DIR/state" XDG_CONFIG_HOME="$DAEMON_DIR/config"
		BEACON_ADDRESS="unix:$DAEMON_SOCKET" BEACON_LIMITS_MAX_QUEUED_BYTES=268435456 BEACON_LOG_LEVEL=warning
		DBUS_SYSTEM_BUS_ADDRESS="unix:path=$DAEMON_DIR/no-bus"
	)
}
