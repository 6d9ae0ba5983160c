# Sourced by scripts that run beacond with its lifecycle bridge connected: a private system bus (dbus-daemon) with
# python-dbusmock's logind template on it, one active session "c1", as the tests set it up.
#   . scripts/mock-logind.sh; start_mock_logind DIR
# sets MOCK_BUS_ADDRESS (give it to beacond as DBUS_SYSTEM_BUS_ADDRESS, with XDG_SESSION_ID=c1) and appends the
# processes to the PIDS array, for the caller's cleanup. Needs dbus-daemon, busctl and python3-dbusmock.
start_mock_logind() {
	local dir=$1
	mkdir -p "$dir"
	cat >"$dir/system.conf" <<-EOF
		<busconfig><type>system</type><listen>unix:path=$dir/system.sock</listen><auth>EXTERNAL</auth>
		<policy context="default"><allow user="*"/><allow own="*"/><allow send_type="method_call"/>
		<allow send_type="signal"/><allow send_type="method_return"/><allow send_type="error"/>
		<allow receive_type="method_call"/><allow receive_type="signal"/><allow receive_type="method_return"/>
		<allow receive_type="error"/></policy></busconfig>
	EOF
	dbus-daemon --config-file="$dir/system.conf" --nofork >"$dir/system-bus.log" 2>&1 &
	PIDS+=($!)
	MOCK_BUS_ADDRESS="unix:path=$dir/system.sock"
	local i
	for i in $(seq 100); do [ -S "$dir/system.sock" ] && break; sleep 0.05; done
	[ -S "$dir/system.sock" ] || { echo "the private system bus did not start: $(cat "$dir/system-bus.log")" >&2; return 1; }
	DBUS_SYSTEM_BUS_ADDRESS=$MOCK_BUS_ADDRESS /usr/bin/python3 -m dbusmock --system --template logind >"$dir/logind.log" 2>&1 &
	PIDS+=($!)
	mock_busctl() { busctl --address="$MOCK_BUS_ADDRESS" "$@"; }
	local owned=
	for i in $(seq 400); do
		[ "$(mock_busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s \
			org.freedesktop.login1 2>/dev/null)" = "b true" ] && owned=1 && break
		sleep 0.05
	done
	[ -n "$owned" ] || { echo "dbusmock's logind did not start: $(tail -3 "$dir/logind.log")" >&2; return 1; }
	local mock="org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.DBus.Mock"
	# shellcheck disable=SC2086
	{
		mock_busctl call $mock AddMethod sssss org.freedesktop.login1.Manager GetUser u o \
			"ret = '/org/freedesktop/login1/user/%d' % args[0]"
		mock_busctl call $mock AddProperty ssv org.freedesktop.login1.Manager InhibitDelayMaxUSec t 5000000
		mock_busctl call $mock AddSession ssusb c1 seat0 "$(id -u)" user true >/dev/null
	}
}
