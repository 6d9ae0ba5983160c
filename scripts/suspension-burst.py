#!/usr/bin/env python3
"""What a suspended observer costs during a burst of notifications, and what it gets on resume.

usage: scripts/suspension-burst.py BEACOND [-n NOTIFICATIONS] [-k OBSERVERS] [--cases CASE,...]

For each case (no observer; an observer that is not suspended; suspended observers with drop, coalesce
and hold), starts BEACOND afresh, has one poster send NOTIFICATIONS oneway posts of 10 names and waits
for the daemon to have handled them all (a final Post answered), then resumes the observer. Prints, per
case, the daemon's CPU time for the burst (all threads, /proc/PID/task/*/schedstat), the messages and bytes the
observer received during the burst, and the size of the catch-up on resume.

With -k OBSERVERS, each suspended case has that many suspended observers besides the one it reports on, each
observing one of the 10 names (`burst.nI`, I = its number modulo 10), and the CPU time per post is printed too:
what a burst costs per suspended observer.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from wire import VarlinkConnection


def cpu_seconds(pid):
    """Time on CPU of every thread of `pid`, from the scheduler's statistics (nanoseconds)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as stat:
            total += int(stat.read().split()[0])
    return total / 1e9


def run(beacond, count, case, extra=0):
    with tempfile.TemporaryDirectory(prefix="beacon-burst-") as root:
        os.mkdir(root + "/run", 0o700)
        path = root + "/run/beacon.sock"
        daemon = subprocess.Popen(
            [beacond],
            env=dict(os.environ, BEACON_ADDRESS="unix:" + path, XDG_STATE_HOME=root, XDG_CONFIG_HOME=root,
                     BEACON_LOG_LEVEL="warning", BEACON_LIFECYCLE_ENABLED="false",
                     BEACON_LIMITS_MAX_QUEUED_BYTES=str(256 << 20)))
        try:
            while not os.path.exists(path):
                time.sleep(0.01)
            observer = None
            if case != "none":
                observer = VarlinkConnection(path)
                parameters = {"patterns": ["burst.**"]}
                if case != "active":
                    parameters["whileSuspended"] = case
                observer.send("io.beacon.Notifications.Observe", parameters, more=True)
                observer.receive()
                if case != "active":
                    observer.send("io.beacon.Suspend", oneway=True)
            others = []
            for index in range(extra if case not in ("none", "active") else 0):
                other = VarlinkConnection(path)
                other.send("io.beacon.Notifications.Observe",
                           {"patterns": ["burst.n%d" % (index % 10)], "whileSuspended": case}, more=True)
                other.receive()
                other.send("io.beacon.Suspend", oneway=True)
                others.append(other)
            poster = VarlinkConnection(path)
            poster.send("io.beacon.Daemon.Status")
            poster.receive()
            before = cpu_seconds(daemon.pid)
            batch = b"".join(
                json.dumps({"method": "io.beacon.Notifications.Post", "parameters": {"name": "burst.n%d" % (i % 10)},
                            "oneway": True}).encode() + b"\0" for i in range(count))
            poster.socket.sendall(batch)
            poster.send("io.beacon.Notifications.Post", {"name": "done.marker"})
            poster.receive(timeout=300)
            cpu = cpu_seconds(daemon.pid) - before
            result = {"case": case, "observers": 1 + len(others) if observer else 0, "cpu_ms": round(cpu * 1000, 1),
                      "ns_per_post": round(cpu * 1e9 / count)}
            if observer is not None:
                if case == "active":
                    # Everything was sent to it: read it all.
                    received = 0
                    size = 0
                    while received < count:
                        frame = observer.receive()
                        received += frame.count(b'"name"')
                        size += len(frame) + 1
                    result["during"] = "%d notifications, %d bytes" % (received, size)
                else:
                    frames, size = observer.pending()
                    result["during"] = "%d messages, %d bytes" % (frames, size)
                    observer.send("io.beacon.Resume", oneway=True)
                    if case != "drop":
                        frame = observer.receive()
                        reply = json.loads(frame)["parameters"]
                        result["on_resume"] = "1 message, %d notifications, %d bytes" % (
                            len(reply["notifications"]), len(frame) + 1)
                    else:
                        poster.send("io.beacon.Notifications.Post", {"name": "burst.after"})
                        poster.receive()
                        reply = json.loads(observer.receive())["parameters"]
                        result["on_resume"] = "nothing (next message: %s)" % [
                            n["name"] for n in reply["notifications"]]
            print(json.dumps(result))
        finally:
            daemon.terminate()
            daemon.wait()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    count = int(sys.argv[sys.argv.index("-n") + 1]) if "-n" in sys.argv else 100_000
    extra = int(sys.argv[sys.argv.index("-k") + 1]) if "-k" in sys.argv else 0
    cases = ("none", "active", "drop", "coalesce", "hold")
    if "--cases" in sys.argv:
        cases = sys.argv[sys.argv.index("--cases") + 1].split(",")
    for case in cases:
        run(sys.argv[1], count, case, extra)


if __name__ == "__main__":
    main()
