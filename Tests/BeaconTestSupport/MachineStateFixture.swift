import Foundation

/// The machine's state services for tests: python-dbusmock's templates (UPower, power-profiles-daemon,
/// NetworkManager, timedated, low-memory-monitor, GNOME's screen saver) and a mock of the desktop portal's Settings,
/// on one private bus that serves as both the system and the session bus; and the shipped `config/bridge.json` in a
/// data directory of its own.
public enum MachineStateFixture {
    public static let portal = "org.freedesktop.portal.Desktop"
    public static let portalPath = "/org/freedesktop/portal/desktop"
    public static let settings = "org.freedesktop.portal.Settings"
    public static let profiles = "net.hadess.PowerProfiles"
    public static let profilesPath = "/net/hadess/PowerProfiles"
    public static let network = "org.freedesktop.NetworkManager"
    public static let networkPath = "/org/freedesktop/NetworkManager"

    /// The shipped bridge file in a data directory of its own, with a quiet time of 300 ms for the memory pressure
    /// in the user's configuration (which replaces the shipped entry).
    public static func dataDirectory() throws -> (data: String, configuration: String) {
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

    public static func startServices(_ bus: PrivateBus) throws {
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
    public static func startPortal(_ bus: PrivateBus) throws {
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

    /// A private bus with every service running, and a daemon that bridges them with the shipped file (and the
    /// lifecycle bridge off); everything stops when it is released.
    public final class Running {
        public let bus: PrivateBus
        public let daemon: TestDaemon
        private let root: String

        public init() throws {
            bus = try PrivateBus()
            do {
                try bus.start()
                try MachineStateFixture.startServices(bus)
                let (data, configuration) = try MachineStateFixture.dataDirectory()
                root = URL(fileURLWithPath: data).deletingLastPathComponent().path
                daemon = try TestDaemon(
                    arguments: ["--config", configuration, "--lifecycle-enabled", "false"],
                    environment: [
                        "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "DBUS_SESSION_BUS_ADDRESS": bus.address,
                        "XDG_DATA_DIRS": data,
                    ])
            } catch {
                bus.shutdown()
                throw error
            }
        }

        deinit {
            bus.shutdown()
            try? FileManager.default.removeItem(atPath: root)
        }
    }
}
