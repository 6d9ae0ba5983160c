import BeaconConfiguration
import BeaconProtocol
import BeaconSystemd

/// The `lifecycle` section of the configuration: the bridge to logind.
public struct LifecycleSettings: Sendable, Hashable {
    /// `lifecycle.enabled`: follow the session and the system through logind (default true).
    public var enabled = true
    /// `lifecycle.sessionId`: the logind session to follow; default `$XDG_SESSION_ID`, else the user's display
    /// session.
    public var sessionID: String?
    /// `lifecycle.sleepInhibitor`: hold a logind `delay` inhibitor for sleep so that participants
    /// (`io.beacon.Lifecycle.HoldSleep`) get time to prepare (default true).
    public var sleepInhibitor = true
    /// `lifecycle.sleepTimeoutMs`: how long participants may take to answer `willSleep` (default 3000); logind's
    /// `InhibitDelayMaxSec` caps it.
    public var sleepTimeout: Duration = .seconds(3)
    /// `lifecycle.reconnectMs`: first delay before connecting to the system bus again, doubled up to 30 s
    /// (default 500).
    public var reconnectDelay: Duration = .milliseconds(500)

    public init() {}

    init(reader: ConfigurationReader) throws {
        enabled = reader.bool(forKey: "lifecycle.enabled", default: true)
        sessionID = reader.string(forKey: "lifecycle.sessionId").flatMap { $0.isEmpty ? nil : $0 }
        sleepInhibitor = reader.bool(forKey: "lifecycle.sleepInhibitor", default: true)
        sleepTimeout = .milliseconds(try reader.positiveInt(forKey: "lifecycle.sleepTimeoutMs", default: 3000))
        reconnectDelay = .milliseconds(try reader.positiveInt(forKey: "lifecycle.reconnectMs", default: 500))
    }

    /// The logind bridge's settings.
    func bridgeConfiguration() -> LogindBridgeConfiguration {
        var configuration = LogindBridgeConfiguration(
            takesSleepInhibitor: sleepInhibitor,
            sleepDelay: sleepTimeout,
            reconnect: DBusReconnectPolicy(initialDelay: reconnectDelay)
        )
        if let sessionID { configuration.sessionID = sessionID }
        return configuration
    }
}

/// The declarative D-Bus bridge of the configuration file's `bridge` section: D-Bus properties and signals of other
/// services mapped onto Beacon properties and notifications.
///
/// ```json
/// "bridge": {
///   "properties": {
///     "system.network.state": {
///       "bus": "system", "name": "org.freedesktop.NetworkManager", "path": "/org/freedesktop/NetworkManager",
///       "interface": "org.freedesktop.NetworkManager", "property": "State"
///     }
///   },
///   "notifications": {
///     "system.network.changed": { "bus": "system", ..., "signal": "StateChanged" }
///   }
/// }
/// ```
///
/// Each entry is keyed by its Beacon key or notification name and names its source with exactly one of
/// `property` or `signal`. `bus` is `system`, `session` or a D-Bus address (`unix:path=/run/example/bus`).
enum BridgeSettings {
    static let fields: Set<String> = ["bus", "name", "path", "interface", "property", "signal"]

    /// Reads the `bridge` section of the parsed configuration file; an absent section is no mapping.
    static func mappings(fromDocument document: JSONValue, limits: KeyLimits) throws -> [DBusMapping] {
        guard case .object(let root) = document, let section = root["bridge"] else { return [] }
        guard case .object(let kinds) = section else {
            throw ConfigurationError(key: "bridge", reason: "expected an object with properties and notifications")
        }
        var mappings: [DBusMapping] = []
        for kind in kinds.keys.sorted() {
            guard kind == "properties" || kind == "notifications", case .object(let entries) = kinds[kind]! else {
                throw ConfigurationError(
                    key: "bridge.\(kind)",
                    reason: "expected \"properties\" or \"notifications\", each an object"
                )
            }
            for target in entries.keys.sorted() {
                mappings.append(
                    try mapping(target: target, kind: kind, entry: entries[target]!, limits: limits)
                )
            }
        }
        return mappings
    }

    private static func mapping(
        target: String,
        kind: String,
        entry: JSONValue,
        limits: KeyLimits
    ) throws -> DBusMapping {
        let key = "bridge.\(kind).\(target)"
        guard case .object(let fields) = entry else {
            throw ConfigurationError(key: key, reason: "expected an object")
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.fields.contains($0) }) {
            throw ConfigurationError(key: key, reason: "unknown field \"\(unknown)\"")
        }
        func text(_ name: String) throws -> String? {
            guard let value = fields[name] else { return nil }
            guard case .string(let string) = value, !string.isEmpty else {
                throw ConfigurationError(key: "\(key).\(name)", reason: "expected a non-empty string")
            }
            return string
        }
        func required(_ name: String) throws -> String {
            guard let value = try text(name) else {
                throw ConfigurationError(key: "\(key).\(name)", reason: "missing")
            }
            return value
        }
        do {
            _ = try PropertyKey(target, limits: limits)
        } catch {
            throw ConfigurationError(key: key, reason: "\"\(target)\" is not a valid key: \(error.reason)")
        }
        if target.split(separator: ".").first.map({ ["lifecycle", "session"].contains(String($0)) }) == true
            || ["system.sleeping", "system.shuttingDown"].contains(target)
        {
            throw ConfigurationError(key: key, reason: "\"\(target)\" belongs to the lifecycle bridge")
        }
        let source: DBusMapping.Source
        switch (try text("property"), try text("signal")) {
        case (let property?, nil): source = .property(property)
        case (nil, let signal?): source = .signal(signal)
        default: throw ConfigurationError(key: key, reason: "expected exactly one of \"property\" and \"signal\"")
        }
        let bus: DBusBusAddress
        switch try text("bus") ?? "session" {
        case "system": bus = .system
        case "session": bus = .session
        case let address where address.utf8.contains(UInt8(ascii: ":")): bus = .address(address)
        case let other:
            throw ConfigurationError(
                key: "\(key).bus",
                reason: "expected system, session or a D-Bus address, got \"\(other)\""
            )
        }
        let mapping = DBusMapping(
            bus: bus,
            name: try required("name"),
            path: try required("path"),
            interface: try required("interface"),
            source: source,
            target: kind == "properties" ? .property(target) : .notification(target)
        )
        do {
            try mapping.validate()
        } catch {
            throw ConfigurationError(key: key, reason: error.message)
        }
        return mapping
    }
}
