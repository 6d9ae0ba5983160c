import BeaconSystemd
import BeaconTestSupport
import Foundation
import Logging

extension Logger {
    static let test: Logger = {
        var logger = Logger(label: "beacon.test.logind")
        logger.logLevel = ProcessInfo.processInfo.environment["BEACON_TEST_LOG"] == nil ? .critical : .trace
        return logger
    }()
}

extension LogindBridgeConfiguration {
    static func test(bus: PrivateBus, sessionID: String? = "c1", sleepDelay: Duration = .seconds(30))
        -> LogindBridgeConfiguration
    {
        LogindBridgeConfiguration(
            bus: .address(bus.plannedAddress), sessionID: sessionID, userID: 1000, processID: getpid(),
            inhibitorWho: "beacon-test", sleepDelay: sleepDelay,
            reconnect: DBusReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(400)))
    }
}

/// Shorthands for expected events.
extension LogindEvent {
    static func flag(_ property: LifecycleProperty, _ value: Bool) -> LogindEvent { .property(property, .bool(value)) }
    static func state(_ active: Bool) -> LogindEvent {
        .property(.lifecycleState, .string(active ? "active" : "inactive"))
    }
    static func note(_ notification: LifecycleNotification) -> LogindEvent { .notification(notification) }

    static func initial(session: String, _ snapshot: LifecycleSnapshot) -> [LogindEvent] {
        [.bridgeState(.connected(sessionPath: LogindMock.sessionPath(session)))]
            + LifecycleProperty.allCases.map { .property($0, snapshot.value(of: $0)) }
    }
}
