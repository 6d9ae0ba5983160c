"""The two wire protocols the measuring scripts speak, at their smallest: varlink to beacond, and the opening of a
D-Bus connection (authentication and Hello) to the peers it is measured beside.

Scripts next to this file import it directly; the Python embedded in the shell scripts finds it through
PYTHONPATH="$ROOT/scripts".
"""
import json
import os
import socket
import struct


class VarlinkConnection:
    """One varlink connection: calls go out as NUL-terminated JSON, replies are read frame by frame."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.connect(path)
        self.buffer = b""

    def send(self, method, parameters=None, **flags):
        call = {"method": method, **flags}
        if parameters is not None:
            call["parameters"] = parameters
        self.socket.sendall(json.dumps(call).encode() + b"\0")

    def receive(self, timeout=30):
        """The next reply's text, without its NUL."""
        self.socket.settimeout(timeout)
        while b"\0" not in self.buffer:
            chunk = self.socket.recv(1 << 20)
            if not chunk:
                raise EOFError("the daemon closed the connection")
            self.buffer += chunk
        frame, _, self.buffer = self.buffer.partition(b"\0")
        return frame

    def read(self, timeout=30):
        return json.loads(self.receive(timeout))

    def call(self, method, parameters=None):
        self.send(method, parameters)
        return self.read()

    def pending(self):
        """Frames and bytes that arrived without being asked for, read without waiting."""
        self.socket.setblocking(False)
        data = b""
        try:
            while True:
                chunk = self.socket.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass
        self.socket.setblocking(True)
        return data.count(b"\0"), len(data)


def _dbus_hello():
    # A method call (type 1) to org.freedesktop.DBus.Hello: little-endian, protocol 1, no body, serial 1, and the
    # header fields path (1), interface (2), member (3) and destination (6), each aligned to 8.
    def pad(data, alignment):
        return data + b"\0" * (-len(data) % alignment)

    fields = b""
    for code, signature, value in ((1, b"o", "/org/freedesktop/DBus"), (2, b"s", "org.freedesktop.DBus"),
                                   (3, b"s", "Hello"), (6, b"s", "org.freedesktop.DBus")):
        data = value.encode()
        fields = pad(fields, 8) + bytes([code, 1]) + signature + b"\0" + struct.pack("<I", len(data)) + data + b"\0"
    return pad(b"l\x01\x00\x01" + struct.pack("<III", 0, 1, len(fields)) + fields, 8)


# Everything a D-Bus client sends to open its connection, in one write: the bus needs no answer in between.
DBUS_OPENING = (b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\nBEGIN\r\n" + _dbus_hello())


def dbus_hello_answered(data):
    """Whether `data`, what the bus sent since the opening, holds the method return (type 2) to Hello."""
    line, separator, message = data.partition(b"\r\n")
    if not separator:
        return False
    if not line.startswith(b"OK"):
        raise RuntimeError(f"authentication refused: {line!r}")
    return len(message) >= 16 and message[1] == 2


def read_until(connection, done):
    """Reads from a socket until `done(everything read)`; fails if the peer closes first."""
    data = b""
    while not done(data):
        chunk = connection.recv(65536)
        if not chunk:
            raise EOFError(f"connection closed after {data[:200]!r}")
        data += chunk
    return data


def dbus_connect(path):
    """A D-Bus connection that has authenticated and said Hello."""
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(path)
    connection.sendall(DBUS_OPENING)
    read_until(connection, dbus_hello_answered)
    return connection
