"""The keys and values of the measurements at many keys (scripts/scale-bench.py, STORE_KEYS of
scripts/callgrind-ops.sh): keys scale.kI.vJ, 100 under each scale.kI, with values of about 60 bytes of JSON.

As a program, `python3 scale_keys.py SOCKET COUNT` writes the first COUNT of them to the beacond at SOCKET.
"""
import json
import sys

from wire import VarlinkConnection


def key(index):
    return f"scale.k{index // 100}.v{index % 100}"


def value(index):
    """About 60 bytes of JSON, written as beacond stores it (compact, members in order), so that both servers keep
    the same bytes."""
    return json.dumps({"name": f"item-{index:08d}", "count": index, "tags": ["a", "b"], "ok": True},
                      separators=(",", ":"), sort_keys=True)


def fill(socket_path, count):
    """Sets the first `count` keys on the beacond at `socket_path`, 1,000 calls at a time."""
    connection = VarlinkConnection(socket_path)
    for first in range(0, count, 1000):
        batch = range(first, min(count, first + 1000))
        data = b"".join(json.dumps({"method": "io.beacon.Properties.Set",
                                    "parameters": {"key": key(i), "value": json.loads(value(i))}}).encode()
                        + b"\0" for i in batch)
        connection.socket.sendall(data)
        for _ in batch:
            reply = connection.read()
            if "error" in reply:
                raise RuntimeError(f"Set failed: {reply}")
    connection.socket.close()


if __name__ == "__main__":
    fill(sys.argv[1], int(sys.argv[2]))
