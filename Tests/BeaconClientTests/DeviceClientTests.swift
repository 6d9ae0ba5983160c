import BeaconClient
import BeaconFoundation
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Signals
import Testing

/// `client.device`: the machine's state as typed remote properties, against the real daemon bridging
/// python-dbusmock's services on a private bus.
@Suite("BeaconClient device", .serialized)
struct DeviceClientTests {
    @Test("typed properties follow the sources: power profile, thermal state, connectivity, colour scheme, warnings")
    func typedProperties() async throws {
        let machine = try MachineStateFixture.Running()
        let (bus, daemon) = (machine.bus, machine.daemon)
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        let device = client.device

        #expect(try await firstValue(of: device.power.isLowPowerModeEnabled, "low power mode") { $0 != nil } == false)
        #expect(try await firstValue(of: device.thermalState, "the thermal state") { $0 != nil } == .nominal)
        #expect(try await firstValue(of: device.network.connectivity, "connectivity") { $0 != nil } == .full)
        #expect(try await firstValue(of: device.network.isExpensive, "metered") { $0 != nil } == true)
        #expect(try await firstValue(of: device.appearance.colorScheme, "the colour scheme") { $0 != nil } == .dark)
        #expect(
            try await firstValue(of: device.appearance.accentColor, "the accent") { $0 != nil } == [0.25, 0.5, 1.0])
        #expect(try await firstValue(of: device.timeZoneIdentifier, "the time zone") { $0 != nil } == "Etc/Utc")
        // With BeaconFoundation, as a TimeZone.
        try machine.bus.busctl(
            "call", "org.freedesktop.timedate1", "/org/freedesktop/timedate1", "org.freedesktop.timedate1",
            "SetTimezone", "sb", "Europe/Paris", "false")
        let paris = try await firstValue(of: device.timeZone, "Paris's time zone") { $0?.identifier == "Europe/Paris" }
        #expect(paris == TimeZone(identifier: "Europe/Paris"))
        #expect(try await firstValue(of: device.isScreenSaverActive, "the screen saver") { $0 != nil } == false)
        #expect(try await firstValue(of: device.power.isOnBattery, "on battery") { $0 != nil } == false)

        // A change of a source reaches the typed property; a binding follows it.
        let lowPower = Property<Bool?>(nil)
        let binding = lowPower <~ device.power.isLowPowerModeEnabled
        defer { binding.dispose() }
        try bus.busctl(
            "set-property", MachineStateFixture.profiles, MachineStateFixture.profilesPath,
            MachineStateFixture.profiles, "ActiveProfile", "s", "power-saver")
        #expect(try await firstValue(of: lowPower, "the bound low power mode") { $0 == true } == true)
        try bus.busctl(
            "set-property", MachineStateFixture.profiles, MachineStateFixture.profilesPath,
            MachineStateFixture.profiles, "PerformanceDegraded", "s", "high-operating-temperature")
        #expect(try await firstValue(of: device.thermalState, "a serious thermal state") { $0 == .serious } == .serious)

        // Low-memory warnings as a signal of levels. The signal's stream starts in the background: a warning sent
        // before it began is not delivered, so warnings are sent until one arrives (bounded).
        let levels = ResultBox<Int>()
        let warnings = device.memory.lowMemoryWarnings.observeNext { levels.fulfill(.success($0)) }
        defer { warnings.dispose() }
        let deadline = ContinuousClock.now + .seconds(15)
        while !levels.isFulfilled && ContinuousClock.now < deadline {
            try bus.busctl(
                "call", "org.freedesktop.LowMemoryMonitor", "/org/freedesktop/LowMemoryMonitor",
                "org.freedesktop.DBus.Mock", "EmitWarning", "y", "15")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await levels.value(within: .seconds(1), "a low-memory warning") == 15)
    }
}
