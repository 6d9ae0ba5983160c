import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// The machine's state as properties: the shipped `config/bridge.json` against python-dbusmock's templates (UPower,
/// power-profiles-daemon, NetworkManager, timedated, low-memory-monitor, GNOME's screen saver) and a small mock of
/// the desktop portal's Settings, all on one private bus that serves as both the system and the session bus.
@Suite("The machine's state as properties", .serialized)
struct MachineStateTests {
    static let portal = "org.freedesktop.portal.Desktop"
    static let portalPath = "/org/freedesktop/portal/desktop"
    static let settings = "org.freedesktop.portal.Settings"
    static let profiles = "net.hadess.PowerProfiles"
    static let profilesPath = "/net/hadess/PowerProfiles"
    static let network = "org.freedesktop.NetworkManager"
    static let networkPath = "/org/freedesktop/NetworkManager"

    /// The latest value of every key a Watch of the machine's keys delivered; absent for a deleted key.
    final class Values {
        let watcher: VarlinkTestClient
        private(set) var values: [String: JSONValue] = [:]

        init(_ daemon: TestDaemon) throws {
            watcher = try daemon.connect()
            let first = try watcher.call(
                "io.beacon.Properties.Watch",
                ["patterns": ["system.**", "desktop.**", "session.screenSaver.**"], "initial": true], more: true)
            guard first.error == nil else { throw TestFailure("Watch failed: \(first)") }
            take(first)
        }

        private func take(_ reply: VarlinkReply) {
            for change in reply["changes"]?.elements ?? [] {
                guard let key = change["key"]?.stringValue else { continue }
                values[key] = change["deleted"] == true ? nil : change["value"]
            }
        }

        /// Waits (bounded by the Watch's receive timeout) until `matches` holds for the values.
        func wait(_ what: String, _ matches: ([String: JSONValue]) -> Bool) throws {
            while !matches(values) {
                do {
                    take(try watcher.receive())
                } catch {
                    throw TestFailure("waiting for \(what): \(error); values: \(values)")
                }
            }
        }

        func wait(for key: String, _ value: JSONValue?) throws {
            try wait("\(key) = \(value.map { "\($0)" } ?? "absent")") { $0[key] == value }
        }
    }

    /// The shipped bridge file in a data directory of its own, with a quiet time of 300 ms for the memory pressure
    /// in the user's configuration (which replaces the shipped entry).
    static func dataDirectory() throws -> (data: String, configuration: String) {
        let root = try makeTemporaryDirectory("beacon-machine-state")
        let source = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("config/bridge.json").path
        try FileManager.default.createDirectory(atPath: root + "/data/beacon", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: source, toPath: root + "/data/beacon/bridge.json")
        let configuration = root + "/beacond.json"
        try """
        {"bridge": {"properties": {"system.memory.pressure": {
          "bus": "system", "name": "org.freedesktop.LowMemoryMonitor", "path": "/org/freedesktop/LowMemoryMonitor",
          "interface": "org.freedesktop.LowMemoryMonitor", "signal": "LowMemoryWarning",
          "initial": 0, "quietMs": 300, "quietValue": 0
        }}}}
        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        return (root + "/data", configuration)
    }

    static func startServices(_ bus: PrivateBus) throws {
        for template in ["upower", "power_profiles_daemon", "networkmanager", "timedated", "low_memory_monitor"] {
            let name = [
                "upower": "org.freedesktop.UPower", "power_profiles_daemon": profiles, "networkmanager": network,
                "timedated": "org.freedesktop.timedate1", "low_memory_monitor": "org.freedesktop.LowMemoryMonitor",
            ][template]!
            try bus.startMock(name: name, arguments: ["--system", "--template", template])
        }
        // NetworkManager's template has no Metered: guess-yes (3).
        try bus.busctl(
            "call", network, networkPath, "org.freedesktop.DBus.Mock", "AddProperty", "ssv", network, "Metered", "u",
            "3")
        try bus.startMock(name: "org.gnome.ScreenSaver", arguments: ["--session", "--template", "gnome_screensaver"])
        try startPortal(bus)
    }

    /// The portal's Settings, as a python-dbusmock template written for the test, so that ReadOne is there as soon
    /// as the name is: it answers a dark color scheme and an accent color.
    static func startPortal(_ bus: PrivateBus) throws {
        let template = bus.directory.path + "/portal_settings.py"
        if !FileManager.default.fileExists(atPath: template) {
            try """
            import dbus

            BUS_NAME = "\(portal)"
            MAIN_OBJ = "\(portalPath)"
            MAIN_IFACE = "\(settings)"
            SYSTEM_BUS = False


            def load(mock, parameters):
                mock.AddMethods(MAIN_IFACE, [
                    ("ReadOne", "ss", "v",
                     "ret = dbus.UInt32(1, variant_level=1) if args[1] == 'color-scheme' else "
                     "dbus.Struct((0.25, 0.5, 1.0), signature='ddd', variant_level=1)"),
                ])

            """.write(toFile: template, atomically: true, encoding: .utf8)
        }
        try bus.startMock(name: portal, arguments: ["--session", "--template", template])
    }

    @Test("each key appears with the source's value, follows its changes, goes with the source and comes back")
    func followsTheSources() throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        try Self.startServices(bus)
        let (data, configuration) = try Self.dataDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: data).deletingLastPathComponent().path)
        }
        let daemon = try TestDaemon(
            arguments: ["--config", configuration, "--lifecycle-enabled", "false", "--lifecycle-reconnect-ms", "50"],
            environment: [
                "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "DBUS_SESSION_BUS_ADDRESS": bus.address,
                "XDG_DATA_DIRS": data,
            ])
        let state = try Values(daemon)
        let expected: [String: JSONValue] = [
            "system.power.onBattery": false, "system.power.lidClosed": false, "system.power.batteryLevel": 0.0,
            "system.power.profile": "balanced", "system.power.lowPowerMode": false, "system.thermal.state": "nominal",
            "system.network.connectivity": "full", "system.network.metered": true, "system.time.zone": "Etc/Utc",
            "system.memory.pressure": 0, "session.screenSaver.active": false,
            "desktop.appearance.colorScheme": "dark", "desktop.appearance.accentColor": [0.25, 0.5, 1.0],
        ]
        try state.wait("every source's value") { values in expected.allSatisfy { values[$0.key] == $0.value } }

        // Changes of each source.
        try bus.busctl(
            "set-property", Self.profiles, Self.profilesPath, Self.profiles, "ActiveProfile", "s", "power-saver")
        try state.wait(for: "system.power.lowPowerMode", true)
        try state.wait(for: "system.power.profile", "power-saver")
        try bus.busctl(
            "set-property", Self.profiles, Self.profilesPath, Self.profiles, "PerformanceDegraded", "s",
            "high-operating-temperature")
        try state.wait(for: "system.thermal.state", "serious")
        try bus.busctl(
            "set-property", Self.profiles, Self.profilesPath, Self.profiles, "PerformanceDegraded", "s", "lap-detected")
        try state.wait(for: "system.thermal.state", "fair")
        try bus.busctl(
            "call", Self.network, Self.networkPath, "org.freedesktop.DBus.Mock", "SetConnectivity", "u", "2")
        try state.wait(for: "system.network.connectivity", "portal")
        try bus.busctl(
            "call", "org.freedesktop.timedate1", "/org/freedesktop/timedate1", "org.freedesktop.timedate1",
            "SetTimezone", "sb", "Europe/Paris", "false")
        try state.wait(for: "system.time.zone", "Europe/Paris")
        try bus.busctl(
            "call", "org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.DBus.Properties", "Set",
            "ssv", "org.freedesktop.UPower", "OnBattery", "b", "true")
        try state.wait(for: "system.power.onBattery", true)
        try bus.busctl(
            "call", "org.gnome.ScreenSaver", "/org/gnome/ScreenSaver", "org.gnome.ScreenSaver", "SetActive", "b", "true"
        )
        try state.wait(for: "session.screenSaver.active", true)
        // Another setting of the portal changes nothing; the color scheme's own does.
        try bus.busctl(
            "call", Self.portal, Self.portalPath, "org.freedesktop.DBus.Mock", "EmitSignal", "sssav", Self.settings,
            "SettingChanged", "ssv", "3", "s", "org.freedesktop.appearance", "s", "contrast", "v", "u", "1")
        try bus.busctl(
            "call", Self.portal, Self.portalPath, "org.freedesktop.DBus.Mock", "EmitSignal", "sssav", Self.settings,
            "SettingChanged", "ssv", "3", "s", "org.freedesktop.appearance", "s", "color-scheme", "v", "u", "2")
        try state.wait(for: "desktop.appearance.colorScheme", "light")
        #expect(state.values["desktop.appearance.accentColor"] == [0.25, 0.5, 1.0])

        // A low-memory warning: a notification with its level, and the pressure, which returns to 0 once quiet.
        let observer = try daemon.connect()
        #expect(
            try observer.call("io.beacon.Notifications.Observe", ["patterns": ["system.memory.**"]], more: true).error
                == nil)
        try bus.busctl(
            "call", "org.freedesktop.LowMemoryMonitor", "/org/freedesktop/LowMemoryMonitor",
            "org.freedesktop.DBus.Mock",
            "EmitWarning", "y", "50")
        let warning = try observer.receiveItems("notifications", count: 1)
        #expect(warning.first?["name"] == "system.memory.lowMemoryWarning")
        #expect(warning.first?["userInfo"] == ["level": 50])
        try state.wait(for: "system.memory.pressure", 50)
        try state.wait(for: "system.memory.pressure", 0)

        // A source that leaves takes its keys with it; back on the bus, it is read again.
        bus.stopMock(name: Self.profiles)
        try state.wait("power-profiles-daemon's keys gone") { values in
            ["system.power.profile", "system.power.lowPowerMode", "system.thermal.state"].allSatisfy {
                values[$0] == nil
            }
        }
        #expect(state.values["system.power.onBattery"] == true, "the other sources stay")
        try bus.startMock(name: Self.profiles, arguments: ["--system", "--template", "power_profiles_daemon"])
        try state.wait(for: "system.power.profile", "balanced")
        try state.wait(for: "system.thermal.state", "nominal")
        bus.stopMock(name: Self.portal)
        try state.wait(for: "desktop.appearance.colorScheme", nil)
        try Self.startPortal(bus)
        try state.wait(for: "desktop.appearance.colorScheme", "dark")

        // Clients cannot write the machine's state.
        let client = try daemon.connect()
        for key in ["system.power.onBattery", "desktop.appearance.colorScheme", "session.screenSaver.active"] {
            let reply = try client.call("io.beacon.Properties.Set", ["key": .string(key), "value": 1])
            #expect(reply.error == "io.beacon.Properties.ReadOnly", "\(key)")
        }
    }
}
