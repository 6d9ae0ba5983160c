#!/usr/bin/env python3
"""Time from a lockdown file's write to the change event a watcher gets.

usage: scripts/lockdown-latency.py BEACOND [-n ROUNDS]

Starts BEACOND with its own runtime, state, schema and lockdown directories, watches one key, and
ROUNDS times writes a lockdown file that forces a new value on it (written to a temporary name and
renamed, as configuration tools do), measuring from just before the write to the arrival of the change
that carries the new value. Prints the median, the 90th percentile and the maximum, in milliseconds.
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    beacond = sys.argv[1]
    rounds = int(sys.argv[sys.argv.index("-n") + 1]) if "-n" in sys.argv else 50
    with tempfile.TemporaryDirectory(prefix="beacon-lockdown-") as root:
        for name in ("run", "state", "schemas", "lockdown"):
            os.mkdir(os.path.join(root, name), 0o700)
        path = os.path.join(root, "run", "beacon.sock")
        daemon = subprocess.Popen(
            [beacond, "--settings-schema-dirs", root + "/schemas", "--settings-lockdown-dir", root + "/lockdown"],
            env=dict(os.environ, BEACON_ADDRESS="unix:" + path, XDG_STATE_HOME=root + "/state",
                     XDG_CONFIG_HOME=root, BEACON_LOG_LEVEL="warning", BEACON_LIFECYCLE_ENABLED="false"),
        )
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(path):
                if time.monotonic() > deadline or daemon.poll() is not None:
                    sys.exit("beacond did not start")
                time.sleep(0.01)
            watcher = socket.socket(socket.AF_UNIX)
            watcher.connect(path)
            watcher.settimeout(5)
            buffered = b""

            def receive():
                nonlocal buffered
                while b"\0" not in buffered:
                    chunk = watcher.recv(65536)
                    if not chunk:
                        sys.exit("the daemon closed the watch")
                    buffered += chunk
                frame, _, buffered = buffered.partition(b"\0")
                return json.loads(frame)

            call = {"method": "io.beacon.Properties.Watch", "parameters": {"patterns": ["kiosk.url"]}, "more": True}
            watcher.sendall(json.dumps(call).encode() + b"\0")
            receive()
            lockdown = os.path.join(root, "lockdown", "kiosk")
            samples = []
            for index in range(rounds):
                value = "https://example.org/%d" % index
                started = time.monotonic()
                with open(lockdown + ".new", "w") as file:
                    file.write("kiosk.url = %s\n" % json.dumps(value))
                os.rename(lockdown + ".new", lockdown)
                while True:
                    changes = receive()["parameters"]["changes"]
                    if any(change.get("value") == value for change in changes):
                        break
                samples.append((time.monotonic() - started) * 1000)
            samples.sort()
            print("lockdown write -> watcher, %d rounds: median %.2f ms, p90 %.2f ms, max %.2f ms" % (
                rounds, statistics.median(samples), samples[int(len(samples) * 0.9) - 1], samples[-1]))
        finally:
            daemon.terminate()
            daemon.wait()


if __name__ == "__main__":
    main()
