#!/bin/bash
# Time from exec to the first answered request on socket activation, beacond beside dbus-daemon, in one run.
# For each run the script makes the listening socket (as systemd's .socket unit does), connects a client and sends
# its first request before the daemon exists, then starts the daemon with the socket as LISTEN_FDS and counts from
# just before the fork to the moment the answer arrives: beacond answers org.varlink.service.GetInfo, dbus-daemon
# the authentication and Hello. Each daemon starts with a fresh runtime directory; beacond's store (one state
# directory for all runs) exists after the first run, as it does after a user's first login. Runs alternate
# between the daemons. Prints every run and the medians.
# Usage: [RUNS=10] [LIFECYCLE=false] scripts/activation-time.sh [BEACOND [OTHER_BEACOND...]]
# Several daemons (e.g. builds before and after a change) are measured in the same runs, named by their paths.
# Without BEACOND, builds what `make install-user` installs (scripts/build-release.sh --static-swift-stdlib). beacond
# runs with its lifecycle bridge off (LIFECYCLE=false), since no system bus is reachable here; it connects to the bus
# after it has begun to answer.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
	set -- "$("$ROOT/scripts/build-release.sh" --static-swift-stdlib beacond)/beacond"
fi
exec env PYTHONPATH="$ROOT/scripts" python3 - "${RUNS:-10}" "${LIFECYCLE:-false}" "$@" <<'PYTHON'
import os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

from wire import DBUS_OPENING, dbus_hello_answered, read_until

runs, lifecycle, beaconds = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
work = tempfile.mkdtemp(prefix="activation-time-")
state = os.path.join(work, "state")
os.mkdir(state, 0o700)

def one(name, run, beacond=None):
    directory = tempfile.mkdtemp(prefix=("beacond-" if beacond else "dbus-daemon-"), dir=work)
    os.chmod(directory, 0o700)
    path = os.path.join(directory, "socket")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)
    client = socket.socket(socket.AF_UNIX)
    client.connect(path)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDNAMES")}
    environment["LISTEN_FDS"] = "1"
    if beacond:
        client.sendall(b'{"method":"org.varlink.service.GetInfo"}\0')
        command = [beacond]
        environment.update(XDG_RUNTIME_DIR=directory, XDG_STATE_HOME=state, BEACON_LOG_LEVEL="warning",
                           BEACON_LIFECYCLE_ENABLED=lifecycle,
                           DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={directory}/no-bus")
        done = lambda data: data.endswith(b"\0")
    else:
        config = os.path.join(directory, "bus.conf")
        with open(config, "w") as f:
            f.write("<busconfig><type>session</type><listen>systemd:</listen><auth>EXTERNAL</auth>"
                    '<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>'
                    '<allow own="*"/></policy>'
                    "</busconfig>")
        client.sendall(DBUS_OPENING)
        command = ["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile", "--systemd-activation"]
        done = dbus_hello_answered
    log = open(os.path.join(directory, "log"), "wb")
    fd = listener.fileno()
    # LISTEN_PID must name the daemon itself and the socket must be its descriptor 3: a shell execs the daemon,
    # keeping its pid, with the listening socket moved to 3.
    started = time.monotonic_ns()
    process = subprocess.Popen(["/bin/sh", "-c", f'LISTEN_PID=$$ exec "$@" 3<&{fd}', "sh"] + command,
                               env=environment, pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    read_until(client, done)
    elapsed = (time.monotonic_ns() - started) / 1e6
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=10)
    client.close()
    listener.close()
    print(f"run {run}: {name} answered {elapsed:.2f} ms after the fork")
    return elapsed

daemons = {("beacond" if len(beaconds) == 1 else f"beacond {path}"): path for path in beaconds}
daemons["dbus-daemon"] = None
results = {name: [] for name in daemons}
try:
    for run in range(1, runs + 1):
        for name, path in daemons.items():
            results[name].append(one(name, run, path))
finally:
    shutil.rmtree(work, ignore_errors=True)
for name, values in results.items():
    print(f"RESULT|{name}|exec to first answered request on socket activation, median of {runs}|ms|"
          f"{statistics.median(values):.2f}")
PYTHON
