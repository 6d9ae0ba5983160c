import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// The machine's state as properties: the shipped `config/bridge.json` against python-dbusmock's templates (UPower,
/// power-profiles-daemon, NetworkManager, timedated, low-memory-monitor, GNOME's screen saver) and a small mock of
/// the desktop portal's Settings, all on one private bus that serves as both the system and the session bus.
@Suite("The machine's state as properties", .serialized)
struct MachineStateTests {
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

    @Test("each key appears with the source's value, follows its changes, goes with the source and comes back")
    func followsTheSources() throws {
        let machine = try MachineStateFixture.Running()
        let (bus, daemon) = (machine.bus, machine.daemon)
        let state = try Values(daemon)
        let expected: [String: JSONValue] = [
            "system.power.onBattery": false, "system.power.lidClosed": false, "system.power.batteryLevel": 0.0,
            "system.power.profile": "balanced", "system.power.lowPowerMode": false, "system.thermal.state": "nominal",
            "system.network.connectivity": "full", "system.network.metered": true, "system.time.zone": "Etc/Utc",
            "system.memory.pressure": 0, "session.screenSaver.active": false,
            "desktop.appearance.colorScheme": "dark", "desktop.appearance.accentColor": [0.25, 0.5, 1.0],
        ]
        try state.wait("every source's value") { values in expected.allSatisfy { values[$0.key] == $0.value } }

        // beaconctl device shows the same, as JSON and as text.
        let json = try runProcess(try BuiltProducts.beaconctl(), ["device", "--json", "--address", daemon.address])
        #expect(json.status == 0, "\(json.errors)")
        #expect(
            try JSONValue(parsing: json.output.trimmingCharacters(in: .whitespacesAndNewlines)) == .object(expected))
        let text = try runProcess(try BuiltProducts.beaconctl(), ["device", "--address", daemon.address])
        #expect(text.output.contains("Color scheme") && text.output.contains("dark"), "\(text.output)")
        #expect(text.output.contains("Thermal state") && text.output.contains("nominal"), "\(text.output)")

        // Changes of each source.
        try bus.busctl(
            "set-property", MachineStateFixture.profiles, MachineStateFixture.profilesPath,
            MachineStateFixture.profiles, "ActiveProfile", "s", "power-saver")
        try state.wait(for: "system.power.lowPowerMode", true)
        try state.wait(for: "system.power.profile", "power-saver")
        try bus.busctl(
            "set-property", MachineStateFixture.profiles, MachineStateFixture.profilesPath,
            MachineStateFixture.profiles, "PerformanceDegraded", "s",
            "high-operating-temperature")
        try state.wait(for: "system.thermal.state", "serious")
        try bus.busctl(
            "set-property", MachineStateFixture.profiles, MachineStateFixture.profilesPath,
            MachineStateFixture.profiles, "PerformanceDegraded", "s", "lap-detected")
        try state.wait(for: "system.thermal.state", "fair")
        try bus.busctl(
            "call", MachineStateFixture.network, MachineStateFixture.networkPath, "org.freedesktop.DBus.Mock",
            "SetConnectivity", "u", "2")
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
            "call", MachineStateFixture.portal, MachineStateFixture.portalPath, "org.freedesktop.DBus.Mock",
            "EmitSignal", "sssav", MachineStateFixture.settings,
            "SettingChanged", "ssv", "3", "s", "org.freedesktop.appearance", "s", "contrast", "v", "u", "1")
        try bus.busctl(
            "call", MachineStateFixture.portal, MachineStateFixture.portalPath, "org.freedesktop.DBus.Mock",
            "EmitSignal", "sssav", MachineStateFixture.settings,
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
        bus.stopMock(name: MachineStateFixture.profiles)
        try state.wait("power-profiles-daemon's keys gone") { values in
            ["system.power.profile", "system.power.lowPowerMode", "system.thermal.state"].allSatisfy {
                values[$0] == nil
            }
        }
        #expect(state.values["system.power.onBattery"] == true, "the other sources stay")
        try bus.startMock(
            name: MachineStateFixture.profiles, arguments: ["--system", "--template", "power_profiles_daemon"])
        try state.wait(for: "system.power.profile", "balanced")
        try state.wait(for: "system.thermal.state", "nominal")
        bus.stopMock(name: MachineStateFixture.portal)
        try state.wait(for: "desktop.appearance.colorScheme", nil)
        try MachineStateFixture.startPortal(bus)
        try state.wait(for: "desktop.appearance.colorScheme", "dark")

        // Clients cannot write the machine's state.
        let client = try daemon.connect()
        for key in ["system.power.onBattery", "desktop.appearance.colorScheme", "session.screenSaver.active"] {
            let reply = try client.call("io.beacon.Properties.Set", ["key": .string(key), "value": 1])
            #expect(reply.error == "io.beacon.Properties.ReadOnly", "\(key)")
        }
    }
}
