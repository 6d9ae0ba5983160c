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
