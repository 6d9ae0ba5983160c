#!/bin/sh
# Measures a daemon's start-up as the service manager sees it: the time from starting the process to its
# READY=1 notification, and its resident memory (VmRSS) right after READY=1 and after an idle pause.
#
# usage: scripts/ready-time.sh [-n RUNS] [-i IDLE_SECONDS] [-t TIMEOUT_SECONDS] BINARY [ARGUMENT...]
#   e.g. scripts/ready-time.sh -n 20 .build/release/beacond
#
# Each run gets NOTIFY_SOCKET pointing at a datagram socket this script listens on, and a private
# XDG_RUNTIME_DIR (so the daemon binds its own socket there); XDG_STATE_HOME is one private directory shared by
# all runs, so the first run creates the store and the others open it. The daemon is stopped with SIGTERM after
# each run. Prints one line per run and the medians. Exits non-zero if any run fails to report READY=1.
set -eu

runs=10
idle=1
timeout=10
while getopts n:i:t: option; do
    case "$option" in
    n) runs=$OPTARG ;;
    i) idle=$OPTARG ;;
    t) timeout=$OPTARG ;;
    *) sed -n '5p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
    sed -n '5p' "$0" >&2
    exit 2
fi

exec python3 - "$runs" "$idle" "$timeout" "$@" <<'PYTHON'
import os, select, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

runs, idle, timeout = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
command = sys.argv[4:]

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")

state_home = tempfile.mkdtemp(prefix="ready-time-state-")
ready_ms, rss_ready, rss_idle = [], [], []
failed = False
for run in range(1, runs + 1):
    runtime_dir = tempfile.mkdtemp(prefix="ready-time-run-")
    os.chmod(runtime_dir, 0o700)
    notify_path = os.path.join(runtime_dir, "notify")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(notify_path)
    environment = dict(os.environ, NOTIFY_SOCKET=notify_path, XDG_RUNTIME_DIR=runtime_dir,
                       XDG_STATE_HOME=state_home)
    for name in ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"):
        environment.pop(name, None)
    log_path = os.path.join(runtime_dir, "output.log")
    with open(log_path, "wb") as log:
        started = time.monotonic_ns()
        process = subprocess.Popen(command, env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = started + int(timeout * 1e9)
        ready_at = None
        while ready_at is None:
            remaining = (deadline - time.monotonic_ns()) / 1e9
            if remaining <= 0 or process.poll() is not None:
                break
            readable, _, _ = select.select([listener], [], [], min(remaining, 0.5))
            if readable:
                message = listener.recv(65536).decode(errors="replace")
                if "READY=1" in message.split("\n"):
                    ready_at = time.monotonic_ns()
        if ready_at is None:
            failed = True
            print(f"run {run}: no READY=1 (exit status {process.poll()}); output in {log_path}", file=sys.stderr)
        else:
            milliseconds = (ready_at - started) / 1e6
            after_ready = rss_kib(process.pid)
            time.sleep(idle)  # the idle period being measured, not a wait for an event
            after_idle = rss_kib(process.pid)
            ready_ms.append(milliseconds)
            rss_ready.append(after_ready)
            rss_idle.append(after_idle)
            print(f"run {run}: READY=1 after {milliseconds:.1f} ms, VmRSS {after_ready / 1024:.1f} MiB at READY, "
                  f"{after_idle / 1024:.1f} MiB after {idle:g} s idle")
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    listener.close()
    if ready_at is not None:
        shutil.rmtree(runtime_dir, ignore_errors=True)

shutil.rmtree(state_home, ignore_errors=True)
if ready_ms:
    print(f"median of {len(ready_ms)}: exec to READY=1 {statistics.median(ready_ms):.1f} ms, "
          f"VmRSS {statistics.median(rss_ready) / 1024:.1f} MiB at READY, "
          f"{statistics.median(rss_idle) / 1024:.1f} MiB idle")
sys.exit(1 if failed or not ready_ms else 0)
PYTHON
