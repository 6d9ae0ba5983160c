import ArgumentParser
import BeaconProtocol

/// `beaconctl device`: the machine's state as the daemon bridges it.
struct DeviceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Show the machine's state: power, thermal, network, memory, time zone, appearance, screen saver.",
        discussion: """
            Reads the properties the daemon bridges from the machine's services (config/bridge.json, installed \
            as /usr/share/beacon/bridge.json): each line is absent while its service is not on the bus. With \
            --json prints one object of those properties by key, {"system.power.onBattery":false,...}.
            """
    )

    @OptionGroup var options: GlobalOptions

    /// The keys shown, with their labels, in order.
    static let keys: [(key: String, label: String)] = [
        ("system.power.onBattery", "On battery"), ("system.power.batteryLevel", "Battery level"),
        ("system.power.lidClosed", "Lid closed"), ("system.power.profile", "Power profile"),
        ("system.power.lowPowerMode", "Low power mode"), ("system.thermal.state", "Thermal state"),
        ("system.network.connectivity", "Connectivity"), ("system.network.metered", "Metered"),
        ("system.memory.pressure", "Memory pressure"), ("system.time.zone", "Time zone"),
        ("desktop.appearance.colorScheme", "Color scheme"), ("desktop.appearance.accentColor", "Accent color"),
        ("session.screenSaver.active", "Screen saver"),
    ]

    func run() throws {
        let daemon = try options.daemon()
        var values: [String: JSONValue] = [:]
        for prefix in ["system", "desktop", "session.screenSaver"] {
            let reply = try daemon.call(IOBeaconProperties.List.method, ["prefix": .string(prefix)])
            for property in reply["properties"]?.arrayValue ?? [] {
                guard let key = property["key"]?.stringValue, Self.keys.contains(where: { $0.key == key }),
                    let value = property["value"]
                else { continue }
                values[key] = value
            }
        }
        var output = OutputBuffer.standardOutput()
        if options.json {
            output.line(JSONText.compact(.object(values)))
            output.flush()
            return
        }
        let rows = Self.keys.compactMap { entry in
            values[entry.key].map { (entry.label, $0.stringValue ?? JSONText.compact($0)) }
        }
        guard !rows.isEmpty else {
            output.line("no machine state: no bridged service is on the bus")
            output.flush()
            return
        }
        for line in LabelledLines.render(rows, on: Terminal.standardOutput()) { output.line(line) }
        output.flush()
    }
}
