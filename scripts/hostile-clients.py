#!/usr/bin/env python3
"""What hostile or careless clients cost beacond: memory and a bystander's Get latency while one client
pipelines Lists it never reads, memory while 300 clients each leave a 1 MB message unfinished, and the
daemon's CPU while it is out of file descriptors.

usage: scripts/hostile-clients.py BEACOND [SCENARIO...]   (e.g. $(scripts/build-release.sh beacond)/beacond)
Scenarios: unread-lists, unfinished-messages, out-of-descriptors (default: all). Needs prlimit (util-linux).
Prints one line per figure.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from proc_status import rss_kib


def settled_rss_kib(pid, bound=60):
    """The resident size once it stops changing for a second (at most `bound` seconds)."""
    deadline = time.monotonic() + bound
    last = rss_kib(pid)
    while time.monotonic() < deadline:
        time.sleep(1)
        now = rss_kib(pid)
        if now == last:
            break
        last = now
    return last


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class Daemon:
    def __init__(self, binary, *arguments):
        self.directory = tempfile.mkdtemp(prefix="beacon-hostile-")
        for name in ("run", "state", "config"):
            os.mkdir(os.path.join(self.directory, name), 0o700)
        self.socket = os.path.join(self.directory, "run", "beacon.sock")
        environment = dict(os.environ, XDG_RUNTIME_DIR=self.directory + "/run",
                           XDG_STATE_HOME=self.directory + "/state", XDG_CONFIG_HOME=self.directory + "/config",
                           BEACON_LOG_LEVEL="warning", DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent")
        self.log = open(os.path.join(self.directory, "beacond.log"), "w")
        self.process = subprocess.Popen([binary, *arguments], env=environment, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.socket):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("beacond did not start")
            time.sleep(0.01)

    def connect(self):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(self.socket)
        return client

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def call(client, method, parameters):
    client.sendall(json.dumps({"method": method, "parameters": parameters}).encode() + b"\0")
    data = b""
    while not data.endswith(b"\0"):
        chunk = client.recv(1 << 20)
        if not chunk:
            raise SystemExit("connection closed")
        data += chunk
    return json.loads(data[:-1])


def unread_lists(binary):
    daemon = Daemon(binary)
    writer = daemon.connect()
    value = "v" * 60_000
    for index in range(1000):
        call(writer, "io.beacon.Properties.Set", {"key": f"big.k{index}", "value": value})
    bystander = daemon.connect()
    call(bystander, "io.beacon.Properties.Get", {"key": "big.k0"})
    before = rss_kib(daemon.process.pid)
    hostile = daemon.connect()
    request = json.dumps({"method": "io.beacon.Properties.List", "parameters": {"prefix": "big"}}).encode() + b"\0"
    hostile.setblocking(False)
    try:
        hostile.send(request * 71)
    except BlockingIOError:
        pass
    peak = before
    latencies = []
    for _ in range(2000):
        start = time.perf_counter()
        call(bystander, "io.beacon.Properties.Get", {"key": "big.k0"})
        latencies.append(time.perf_counter() - start)
        peak = max(peak, rss_kib(daemon.process.pid))
    latencies.sort()
    hostile.close()
    daemon.stop()
    print(f"71 unread Lists of 60 MB: daemon grew {(peak - before) / 1024:.1f} MiB; "
          f"bystander Get p50 {latencies[1000] * 1e6:.0f} us, p99 {latencies[1980] * 1e6:.0f} us, "
          f"slowest {latencies[-1] * 1e3:.1f} ms (2000 Gets)")


def unfinished_messages(binary):
    daemon = Daemon(binary)
    before = rss_kib(daemon.process.pid)
    start = b'{"method":"io.beacon.Properties.Set","parameters":{"key":"k","value":"'
    body = start + b"x" * (1_000_000 - len(start))
    clients = []
    refused = 0
    for _ in range(300):
        client = daemon.connect()
        try:
            client.sendall(body)
        except (BrokenPipeError, ConnectionResetError):
            refused += 1
        clients.append(client)
    grown = settled_rss_kib(daemon.process.pid) - before
    for client in clients:
        client.close()
    daemon.stop()
    print(f"300 unfinished 1 MB messages: daemon grew {grown / 1024:.1f} MiB "
          f"(limits.maxBytesPerUid 64 MiB; {refused} connections closed while sending)")


def out_of_descriptors(binary):
    daemon = Daemon(binary)
    subprocess.run(["prlimit", "--pid", str(daemon.process.pid), "--nofile=64:64"], check=True)
    clients = []
    stuck = 0
    for _ in range(200):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.setblocking(False)
        try:
            client.connect(daemon.socket)
        except (BlockingIOError, InterruptedError):
            stuck += 1  # the listen queue is full
        clients.append(client)
    # Measure once the daemon holds all the descriptors it may.
    deadline = time.monotonic() + 30
    while len(os.listdir(f"/proc/{daemon.process.pid}/fd")) < 62 and time.monotonic() < deadline:
        time.sleep(0.05)
    before = cpu_ticks(daemon.process.pid)
    time.sleep(10)
    used = cpu_ticks(daemon.process.pid) - before
    for client in clients:
        client.close()
    daemon.stop()
    ticks = os.sysconf("SC_CLK_TCK")
    print(f"out of descriptors (nofile 64, 200 clients): daemon CPU {used / ticks / 10 * 100:.1f}% over 10 s; "
          f"{stuck} connects found the listen queue full")


SCENARIOS = {"unread-lists": unread_lists, "unfinished-messages": unfinished_messages,
             "out-of-descriptors": out_of_descriptors}

if __name__ == "__main__":
    if len(sys.argv) < 2 or any(name not in SCENARIOS for name in sys.argv[2:]):
        raise SystemExit(__doc__)
    for name in sys.argv[2:] or SCENARIOS:
        SCENARIOS[name](sys.argv[1])
