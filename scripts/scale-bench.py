"""Beacon's costs at many keys, beside redis-server on the same keys and values (scripts/scale-bench.sh runs it).

For each size N: keys scale.kI.vJ (J from 0 to 99, so that each scale.kI holds 100 keys) with values of about 60
bytes of JSON are written to a fresh beacond (pipelined Sets) and to a fresh redis-server (pipelined SETs, then
SAVE to an RDB file); both are stopped and started again on what they stored, and measured:

- memory per key: (VmRSS with N keys - VmRSS of an empty store) / N, each after its first answer, and for beacond
  again once the integrity check of a large store (on a thread of its own after the start) is over;
- exec -> first answer: from starting the process to the first answered Get (GET) of a stored key, polling;
- List of a prefix of 100 keys, and Watch with initial of the same 100 keys (beacond only), the median of 50 calls;
- the store on disk per key (beacond's SQLite file and its write-ahead log, Redis's RDB file), after the stop;
- Watch with since of 100 Sets made after the start (keys spread over the store), and of the last 100 Sets before
  it (read from the store's rows), medians of 20;
- bytes the restarted beacond wrote (its write calls, /proc/PID/io wchar) from its start to after the List and
  Watch calls: a restart that rewrote the store would show here.

One table, with the goals of issue "A million keys" and whether each is met.
usage: python3 scale-bench.py BEACOND SIZE...
"""
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from proc_status import rss_kib
from scale_keys import fill, key, value
from wire import VarlinkConnection

BEACOND = sys.argv[1]
SIZES = [int(size) for size in sys.argv[2:]] or [1000, 10000, 100000]


def wait_until(probe, limit=120):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        try:
            if probe():
                return
        except (OSError, EOFError, ConnectionError):
            pass
        time.sleep(0.0005)
    raise TimeoutError("no answer")


class Beacond:
    def __init__(self, directory):
        self.directory = directory
        for name in ("run", "state", "config"):
            os.makedirs(f"{directory}/{name}", mode=0o700, exist_ok=True)
        self.socket = f"{directory}/run/beacon.sock"
        self.environment = dict(os.environ, XDG_RUNTIME_DIR=f"{directory}/run", XDG_STATE_HOME=f"{directory}/state",
                                XDG_CONFIG_HOME=f"{directory}/config", BEACON_ADDRESS=f"unix:{self.socket}",
                                BEACON_LOG_LEVEL="warning", BEACON_LIMITS_MAX_QUEUED_BYTES="268435456",
                                DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={directory}/no-bus")
        self.process = None

    def start(self, probe_key, stored=True):
        """Starts the daemon; returns seconds from exec to the first answered Get of `probe_key` (its value when
        `stored`, else KeyNotFound)."""
        start = time.monotonic()
        self.process = subprocess.Popen([BEACOND], env=self.environment, stdout=subprocess.DEVNULL)

        def answered():
            connection = VarlinkConnection(self.socket)
            reply = connection.call("io.beacon.Properties.Get", {"key": probe_key})
            connection.socket.close()
            if stored:
                if "error" in reply:
                    raise RuntimeError(f"Get {probe_key}: {reply}")
                return True
            return reply.get("error") == "io.beacon.Properties.KeyNotFound"

        wait_until(answered)
        return time.monotonic() - start

    def load(self, count):
        fill(self.socket, count)

    def watch_ms(self, prefix, calls=50):
        times = []
        for _ in range(calls):
            connection = VarlinkConnection(self.socket)
            start = time.monotonic()
            connection.send("io.beacon.Properties.Watch", {"patterns": [f"{prefix}.**"], "initial": True}, more=True)
            reply = connection.read()
            times.append((time.monotonic() - start) * 1000)
            connection.socket.close()
            if len(reply["parameters"]["changes"]) != 100:
                raise RuntimeError(f"Watch {prefix} gave {len(reply['parameters']['changes'])} changes")
        return statistics.median(times)

    def since_ms(self, count, calls=20):
        """(ms of a Watch replaying 100 Sets made since the start, ms of one replaying the last 100 Sets before the
        start), medians of `calls`."""
        connection = VarlinkConnection(self.socket)
        before = connection.call("io.beacon.Properties.Get", {"key": key(count - 1)})["parameters"]["property"]
        first = None
        for index in range(100):
            number = (index * 7919) % count
            version = connection.call("io.beacon.Properties.Set", {"key": key(number), "value": index})
            first = first or version["parameters"]["version"]
        connection.socket.close()
        figures = []
        for since, expected in ((first - 1, 100), (before["version"] - 100, None)):
            times = []
            for _ in range(calls):
                watcher = VarlinkConnection(self.socket)
                start = time.monotonic()
                watcher.send("io.beacon.Properties.Watch", {"patterns": ["scale.**"], "since": since}, more=True)
                reply = watcher.read()
                times.append((time.monotonic() - start) * 1000)
                watcher.socket.close()
                changes = len(reply["parameters"]["changes"])
                if changes < (expected or 100) or (expected and changes != expected):
                    raise RuntimeError(f"Watch since {since} gave {changes} changes")
            figures.append(statistics.median(times))
        return figures

    def disk_bytes(self):
        path = f"{self.directory}/state/beacon/store.sqlite"
        return sum(os.path.getsize(path + suffix) for suffix in ("", "-wal") if os.path.exists(path + suffix))

    def rss_after_check_kib(self, limit=120):
        """VmRSS once the store's integrity check thread ended (a store of more than 16 MiB is checked after the
        start); at once for a smaller store."""
        if self.disk_bytes() > 16 << 20:
            tasks = f"/proc/{self.process.pid}/task"
            start = time.monotonic()
            threads = len(os.listdir(tasks))
            while len(os.listdir(tasks)) >= threads and time.monotonic() - start < limit:
                time.sleep(0.05)
        return rss_kib(self.process.pid)

    def written_bytes(self):
        with open(f"/proc/{self.process.pid}/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))

    def list_ms(self, prefix, calls=50):
        connection = VarlinkConnection(self.socket)
        times = []
        for _ in range(calls):
            start = time.monotonic()
            reply = connection.call("io.beacon.Properties.List", {"prefix": prefix})
            times.append((time.monotonic() - start) * 1000)
            if len(reply["parameters"]["properties"]) != 100:
                raise RuntimeError(f"List {prefix} gave {len(reply['parameters']['properties'])} keys")
        connection.socket.close()
        return statistics.median(times)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=300)


class Redis:
    def __init__(self, directory):
        self.directory = directory
        self.socket = f"{directory}/redis.sock"
        self.process = None

    def start(self, probe_key, stored=True):
        start = time.monotonic()
        self.process = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.socket, "--dir", self.directory, "--dbfilename",
             "dump.rdb", "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)

        def answered():
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(self.socket)
                name = probe_key.encode()
                client.sendall(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(name), name))
                reply = client.recv(4096)
                if stored and reply.startswith(b"$-1"):
                    raise RuntimeError(f"GET {probe_key}: no value")
                return reply[:1] == b"$"

        wait_until(answered)
        return time.monotonic() - start

    def load(self, count):
        commands = bytearray()
        for index in range(count):
            name, text = key(index).encode(), value(index).encode()
            commands += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(name), name, len(text), text)
        subprocess.run(["redis-cli", "-s", self.socket, "--pipe"], input=bytes(commands), check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["redis-cli", "-s", self.socket, "SAVE"], check=True, stdout=subprocess.DEVNULL)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=300)

    def disk_bytes(self):
        return os.path.getsize(f"{self.directory}/dump.rdb")


def measure(kind, count):
    """(RSS KiB after the first answer, seconds to it, List ms, Watch ms, disk bytes, bytes written by the restart,
    RSS KiB after the integrity check)
    of a restarted server with `count` keys; the beacond-only figures are None for Redis."""
    with tempfile.TemporaryDirectory(prefix="scale-bench.") as directory:
        server = kind(directory)
        server.start(key(0), stored=False)
        if count:
            server.load(count)
        server.stop()
        seconds = server.start(key(count // 2), stored=count > 0)
        rss = rss_kib(server.process.pid)
        listing = watching = written = checked = since = None
        if count and kind is Beacond:
            checked = server.rss_after_check_kib()
            listing = server.list_ms(f"scale.k{count // 200}")
            watching = server.watch_ms(f"scale.k{count // 200}")
            written = server.written_bytes()
            since = server.since_ms(count)
        server.stop()
        disk = server.disk_bytes() if count else None
        return rss, seconds, listing, watching, disk, written, checked, since


def main():
    empty = {kind: measure(kind, 0)[0] for kind in (Beacond, Redis)}
    rows = {}
    for count in SIZES:
        rows[count] = {kind: measure(kind, count) for kind in (Beacond, Redis)}
    print(f"{'keys':>9} {'beacond B/key':>14} {'Redis B/key':>12} {'beacond start ms':>17} {'Redis start ms':>15}"
          f" {'List(100) ms':>13} {'Watch(100) ms':>14} {'disk B/key':>11} {'RDB B/key':>10}"
          f" {'restart wrote B':>16} {'beacond B/key after check':>26} {'since(start) ms':>16}"
          f" {'since(stored) ms':>17}")
    for count, row in rows.items():
        b, r = row[Beacond], row[Redis]
        print(f"{count:>9} {(b[0] - empty[Beacond]) * 1024 / count:>14.0f} {(r[0] - empty[Redis]) * 1024 / count:>12.0f}"
              f" {b[1] * 1000:>17.1f} {r[1] * 1000:>15.1f} {b[2]:>13.2f} {b[3]:>14.2f} {b[4] / count:>11.0f}"
              f" {r[4] / count:>10.0f} {b[5]:>16} {(b[6] - empty[Beacond]) * 1024 / count:>26.0f}"
              f" {b[7][0]:>16.2f} {b[7][1]:>17.2f}")
    print()
    smallest, largest = min(rows), max(rows)
    goals = [
        (f"memory per key at {largest}, beacond / Redis", (rows[largest][Beacond][0] - empty[Beacond])
         / max(1, rows[largest][Redis][0] - empty[Redis]), "<=", 1.0),
        (f"memory per key at {largest} after the check, beacond / Redis", (rows[largest][Beacond][6] - empty[Beacond])
         / max(1, rows[largest][Redis][0] - empty[Redis]), "<=", 1.0),
        (f"exec -> first answer at {largest}, ms", rows[largest][Beacond][1] * 1000, "<=", 50.0),
        (f"exec -> first answer at {largest}, beacond / Redis", rows[largest][Beacond][1] / rows[largest][Redis][1],
         "<=", 1.0),
        (f"List of 100 keys at {largest} / at {smallest}", rows[largest][Beacond][2] / rows[smallest][Beacond][2],
         "<=", 2.0),
        (f"Watch(initial) of 100 keys at {largest} / at {smallest}",
         rows[largest][Beacond][3] / rows[smallest][Beacond][3], "<=", 2.0),
        (f"Watch(since) of 100 Sets after the start at {largest} / at {smallest}",
         rows[largest][Beacond][7][0] / rows[smallest][Beacond][7][0], "<=", 2.0),
        (f"store on disk at {largest}, bytes per key", rows[largest][Beacond][4] / largest, "<=", 130.0),
    ]
    if 100000 in rows and largest != 100000:
        goals.insert(1, ("memory per key at 100000, beacond / Redis", (rows[100000][Beacond][0] - empty[Beacond])
                         / max(1, rows[100000][Redis][0] - empty[Redis]), "<=", 1.0))
    print(f"{'goal':<58} {'value':>8} {'goal':>8}  met")
    for name, measured, relation, goal in goals:
        met = measured <= goal
        print(f"{name:<58} {measured:>8.2f} {relation:>3} {goal:<5}  {'yes' if met else 'no'}")


if __name__ == "__main__":
    main()
