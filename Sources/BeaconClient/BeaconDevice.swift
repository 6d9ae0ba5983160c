import BeaconProtocol
import Signals

/// The machine's state as the daemon bridges it from the services that know it (UPower, power-profiles-daemon,
/// NetworkManager, timedated, low-memory-monitor, the desktop portal, the screen saver; `config/bridge.json`), as
/// typed remote properties named as Apple's `ProcessInfo`, `NWPath` and appearance APIs name them.
///
/// ```swift
/// syncIndicator.reactive.isHidden <~ client.device.network.isExpensive.map { $0 == true }
/// client.device.power.isLowPowerModeEnabled.observeNext { lowPower in scheduler.throttle(lowPower == true) }
/// client.device.memory.lowMemoryWarnings.observeNext { level in cache.trim(level) }
/// ```
///
/// Each property is `nil` while its source is not on the bus (or the daemon has no bridge for it), and a value
/// this version does not know decodes as `nil` too, reported on ``BeaconClient/errors``.
public struct BeaconDevice: Sendable {
    let client: BeaconClient

    /// Power: battery, lid, power profile.
    public var power: Power { Power(client: client) }
    /// Network connectivity and cost.
    public var network: Network { Network(client: client) }
    /// Memory pressure.
    public var memory: Memory { Memory(client: client) }
    /// The desktop's colour scheme and accent colour.
    public var appearance: Appearance { Appearance(client: client) }

    /// `system.thermal.state`, as `ProcessInfo.ThermalState`.
    public var thermalState: RemoteProperty<ThermalState?> {
        client.property("system.thermal.state", as: ThermalState.self)
    }

    /// `system.time.zone`: the time zone's identifier (`Europe/Paris`).
    public var timeZoneIdentifier: RemoteProperty<String?> { client.property("system.time.zone", as: String.self) }

    /// `session.screenSaver.active`.
    public var isScreenSaverActive: RemoteProperty<Bool?> {
        client.property("session.screenSaver.active", as: Bool.self)
    }

    /// `ProcessInfo.ThermalState`'s cases. power-profiles-daemon reports `nominal`, `fair` (performance degraded
    /// for a reason other than temperature) and `serious` (too hot); `critical` comes from no source yet.
    public enum ThermalState: String, Sendable, Hashable, CaseIterable, Codable {
        case nominal, fair, serious, critical
    }

    public struct Power: Sendable {
        let client: BeaconClient

        /// `system.power.onBattery`.
        public var isOnBattery: RemoteProperty<Bool?> { client.property("system.power.onBattery", as: Bool.self) }
        /// `system.power.batteryLevel`: 0 to 100.
        public var batteryLevel: RemoteProperty<Double?> {
            client.property("system.power.batteryLevel", as: Double.self)
        }
        /// `system.power.lidClosed`.
        public var isLidClosed: RemoteProperty<Bool?> { client.property("system.power.lidClosed", as: Bool.self) }
        /// `system.power.lowPowerMode`: the power-saver profile is active.
        public var isLowPowerModeEnabled: RemoteProperty<Bool?> {
            client.property("system.power.lowPowerMode", as: Bool.self)
        }
        /// `system.power.profile`: `power-saver`, `balanced` or `performance`.
        public var profile: RemoteProperty<String?> { client.property("system.power.profile", as: String.self) }
    }

    public struct Network: Sendable {
        let client: BeaconClient

        /// NetworkManager's connectivity states.
        public enum Connectivity: String, Sendable, Hashable, CaseIterable, Codable {
            case unknown, none, portal, limited, full
        }

        /// `system.network.connectivity`.
        public var connectivity: RemoteProperty<Connectivity?> {
            client.property("system.network.connectivity", as: Connectivity.self)
        }
        /// `system.network.metered`, as `NWPath.isExpensive`.
        public var isExpensive: RemoteProperty<Bool?> { client.property("system.network.metered", as: Bool.self) }
    }

    public struct Memory: Sendable {
        let client: BeaconClient

        /// `system.memory.lowMemoryWarning`: each warning's level (low-memory-monitor's 0 to 255).
        public var lowMemoryWarnings: RemoteSignal<Int> {
            client.notifications("system.memory.lowMemoryWarning").compactMap { note in
                note.userInfo?["level"]?.intValue.map(Int.init)
            }
        }
        /// `system.memory.pressure`: the last warning's level, 0 once quiet.
        public var pressure: RemoteProperty<Int?> { client.property("system.memory.pressure", as: Int.self) }
    }

    public struct Appearance: Sendable {
        let client: BeaconClient

        /// The portal's `color-scheme` values.
        public enum ColorScheme: String, Sendable, Hashable, CaseIterable, Codable {
            case noPreference, dark, light
        }

        /// `desktop.appearance.colorScheme`.
        public var colorScheme: RemoteProperty<ColorScheme?> {
            client.property("desktop.appearance.colorScheme", as: ColorScheme.self)
        }
        /// `desktop.appearance.accentColor`: red, green and blue, each 0 to 1.
        public var accentColor: RemoteProperty<[Double]?> {
            client.property("desktop.appearance.accentColor", as: [Double].self)
        }
    }
}

extension BeaconClient {
    /// The machine's state: `client.device.power.isOnBattery`, `client.device.thermalState`...
    public var device: BeaconDevice { BeaconDevice(client: self) }
}
