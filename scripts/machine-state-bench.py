#!/usr/bin/python3
"""The machine's state as properties, measured (issue figures for config/bridge.json):

1. A source's change reaching a client, beside the same change read with `busctl monitor`: power-profiles-daemon's
   ActiveProfile (python-dbusmock's template on a private bus) is set ROUNDS times, alternating, with one D-Bus
   Set call each; from just before the call, the time until a varlink Watch of system.power.profile delivers the
   new value, and the time until `busctl monitor` prints the PropertiesChanged signal. p50 and p99 of each, and
   the ratio (goal: at most 1.5).
2. Idle PSS of beacond with every bridge of config/bridge.json on and its services running, beside the same
   daemon without the bridge file, each with one client that has made one call, after SETTLE seconds
   (/proc/PID/smaps_rollup; goal: at most 1 MiB more). Both run the lifecycle bridge, on by default, against
   python-dbusmock's logind, so both have loaded sd-bus: the difference is what the bridge file adds.

Usage: [ROUNDS=300] [SETTLE=3] scripts/machine-state-bench.py [BEACOND]
Without BEACOND, builds what `make install-user` installs (scripts/build-release.sh --static-swift-stdlib).
Needs dbus-daemon, busctl, python3-dbus and python3-dbusmock (Debian packages).
"""
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import dbus

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_status import pss_kib  # noqa: E402
from wire import VarlinkConnection  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("ROUNDS", "300"))
SETTLE = float(os.environ.get("SETTLE", "3"))
PROFILES = "net.hadess.PowerProfiles"
PROFILES_PATH = "/net/hadess/PowerProfiles"
TEMPLATES = {
    "upower": "org.freedesktop.UPower",
    "power_profiles_daemon": PROFILES,
    "networkmanager": "org.freedesktop.NetworkManager",
    "timedated": "org.freedesktop.timedate1",
    "low_memory_monitor": "org.freedesktop.LowMemoryMonitor",
    "gnome_screensaver": "org.gnome.ScreenSaver",
    "logind": "org.freedesktop.login1",
}
PORTAL_TEMPLATE = '''import dbus
BUS_NAME = "org.freedesktop.portal.Desktop"
MAIN_OBJ = "/org/freedesktop/portal/desktop"
MAIN_IFACE = "org.freedesktop.portal.Settings"
SYSTEM_BUS = False


def load(mock, parameters):
    mock.AddMethods(MAIN_IFACE, [("ReadOne", "ss", "v", "ret = dbus.UInt32(1, variant_level=1)")])
'''
BUS_CONFIG = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/>
    <allow send_type="method_call"/><allow send_type="signal"/>
    <allow send_type="method_return"/><allow send_type="error"/>
    <allow receive_type="method_call"/><allow receive_type="signal"/>
    <allow receive_type="method_return"/><allow receive_type="error"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
'''

processes = []


def start(arguments, environment=None, **options):
    process = subprocess.Popen(arguments, env=environment, **options)
    processes.append(process)
    return process


def wait_for(what, condition, limit=20):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    sys.exit(f"machine-state-bench: timed out waiting for {what}")


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    beacond = sys.argv[1] if len(sys.argv) > 1 else None
    if beacond is None:
        built = subprocess.run(
            [os.path.join(ROOT, "scripts/build-release.sh"), "--static-swift-stdlib", "beacond"],
            check=True, capture_output=True, text=True)
        beacond = built.stdout.strip().splitlines()[-1] + "/beacond"
    work = tempfile.mkdtemp(prefix="machine-state-bench.")
    try:
        run(beacond, work)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(work, ignore_errors=True)


def run(beacond, work):
    socket_path = os.path.join(work, "bus")
    with open(os.path.join(work, "bus.conf"), "w") as config:
        config.write(BUS_CONFIG.format(socket=socket_path))
    bus_daemon = start(["dbus-daemon", "--config-file=" + os.path.join(work, "bus.conf"), "--nofork",
                        "--print-address"], stdout=subprocess.PIPE, text=True)
    address = bus_daemon.stdout.readline().strip()
    environment = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address, DBUS_SESSION_BUS_ADDRESS=address)
    connection = dbus.bus.BusConnection(address)
    with open(os.path.join(work, "portal.py"), "w") as template:
        template.write(PORTAL_TEMPLATE)
    mocks = dict(TEMPLATES)
    mocks[os.path.join(work, "portal.py")] = "org.freedesktop.portal.Desktop"
    for template, name in mocks.items():
        start([sys.executable, "-m", "dbusmock", "--system", "--template", template], environment,
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(name, lambda name=name: connection.name_has_owner(name))

    os.makedirs(os.path.join(work, "data/beacon"))
    shutil.copy(os.path.join(ROOT, "config/bridge.json"), os.path.join(work, "data/beacon/bridge.json"))
    os.makedirs(os.path.join(work, "empty"))

    def daemon(name, data):
        directory = os.path.join(work, name)
        for part in ("run", "state", "config"):
            os.makedirs(os.path.join(directory, part), mode=0o700)
        variables = dict(environment, XDG_RUNTIME_DIR=directory + "/run", XDG_STATE_HOME=directory + "/state",
                         XDG_CONFIG_HOME=directory + "/config", XDG_DATA_DIRS=data, HOME=directory,
                         BEACON_LOG_LEVEL="warning")
        process = start([beacond], variables, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        path = directory + "/run/beacon.sock"
        wait_for(f"{name}'s socket", lambda: os.path.exists(path))
        return process, path

    bridged, bridged_socket = daemon("bridged", os.path.join(work, "data"))
    plain, plain_socket = daemon("plain", os.path.join(work, "empty"))

    # 2. Idle PSS: one call each, then settle.
    clients = []
    for path in (bridged_socket, plain_socket):
        client = VarlinkConnection(path)
        client.send("org.varlink.service.GetInfo")
        client.read()
        clients.append(client)
    time.sleep(SETTLE)
    pss_bridged, pss_plain = pss_kib(bridged.pid), pss_kib(plain.pid)

    # 1. Latency of a change.
    watcher = VarlinkConnection(bridged_socket)
    watcher.send("io.beacon.Properties.Watch", {"patterns": ["system.power.profile"], "initial": True}, more=True)
    current = None
    while current != "balanced":
        for change in watcher.read().get("parameters", {}).get("changes", []):
            current = change.get("value")
    monitor = start(["busctl", "--address=" + address, "monitor", "--json=short",
                     f"--match=type='signal',path='{PROFILES_PATH}',member='PropertiesChanged'"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen = queue.Queue()

    def read_monitor():
        for line in monitor.stdout:
            if "PropertiesChanged" in line and "ActiveProfile" in line:
                seen.put(time.monotonic())

    threading.Thread(target=read_monitor, daemon=True).start()
    properties = dbus.Interface(connection.get_object(PROFILES, PROFILES_PATH), "org.freedesktop.DBus.Properties")
    # busctl monitor is listening once a change is seen through it.
    while True:
        properties.Set(PROFILES, "ActiveProfile", "performance")
        properties.Set(PROFILES, "ActiveProfile", "balanced")
        try:
            seen.get(timeout=0.5)
            break
        except queue.Empty:
            continue
    time.sleep(0.2)
    while not seen.empty():
        seen.get()
    while True:
        changes = watcher.read(timeout=1).get("parameters", {}).get("changes", [])
        if changes and changes[-1].get("value") == "balanced":
            break
    through_beacon, through_monitor = [], []
    for index in range(ROUNDS):
        value = ("power-saver", "balanced")[index % 2]
        started = time.monotonic()
        properties.Set(PROFILES, "ActiveProfile", value)
        while True:
            changes = watcher.read(timeout=10).get("parameters", {}).get("changes", [])
            if any(change.get("value") == value for change in changes):
                break
        delivered = time.monotonic()
        monitored = seen.get(timeout=10)
        through_beacon.append((delivered - started) * 1e6)
        through_monitor.append((monitored - started) * 1e6)

    print(f"# beacond {beacond}; {ROUNDS} changes; loadavg {open('/proc/loadavg').read().split()[0]}")
    print(f"{'measure':58} {'p50':>9} {'p99':>9}")
    for label, values in (("ActiveProfile set -> system.power.profile at a Watch (us)", through_beacon),
                          ("ActiveProfile set -> busctl monitor prints it (us)", through_monitor)):
        print(f"{label:58} {percentile(values, 0.5):9.0f} {percentile(values, 0.99):9.0f}")
    ratio50 = percentile(through_beacon, 0.5) / percentile(through_monitor, 0.5)
    ratio99 = percentile(through_beacon, 0.99) / percentile(through_monitor, 0.99)
    print(f"{'ratio, Watch / busctl monitor (goal <= 1.5)':58} {ratio50:9.2f} {ratio99:9.2f}")
    print(f"{'idle PSS, every bridge on and its services running (KiB)':58} {pss_bridged:9d}")
    print(f"{'idle PSS, no bridge file (KiB)':58} {pss_plain:9d}")
    print(f"{'difference (goal <= 1024 KiB)':58} {pss_bridged - pss_plain:9d}")


if __name__ == "__main__":
    main()
