import BeaconSystemd
import Logging

/// The daemon's bridges from D-Bus: the logind lifecycle bridge and the declarative bridge of the configuration.
/// Both run on the daemon's event loop (sd-bus's descriptors and time-outs are the loop's), so they cost no thread;
/// their events are applied to the bus in order.
final class DaemonBridges: Sendable {
    let logind: LogindBridge?
    let dbus: DBusBridge?
    private let logger: Logger

    /// Creates the bridges the configuration asks for. A bridge that cannot be created is logged and left out;
    /// the daemon serves without it.
    init(configuration: DaemonConfiguration, logger: Logger) {
        self.logger = logger
        var logind: LogindBridge?
        if configuration.lifecycle.enabled {
            do {
                logind = try LogindBridge(
                    configuration: configuration.lifecycle.bridgeConfiguration(),
                    eventLoop: DaemonEventLoop.shared,
                    logger: logger
                )
            } catch {
                logger.error("cannot create the lifecycle bridge: \(error)")
            }
        }
        self.logind = logind
        var dbus: DBusBridge?
        if !configuration.bridge.isEmpty {
            do {
                dbus = try DBusBridge(
                    mappings: configuration.bridge,
                    reconnect: DBusReconnectPolicy(initialDelay: configuration.lifecycle.reconnectDelay),
                    eventLoop: DaemonEventLoop.shared,
                    logger: logger
                )
            } catch {
                logger.error("cannot create the D-Bus bridge: \(error)")
            }
        }
        self.dbus = dbus
    }

    /// Starts the bridges and applies their events through `apply` until ``shutdown()``. Returns when
    /// both event streams have finished.
    func run(
        applyLifecycle: @escaping @Sendable (LogindEvent) async -> Void,
        applyBridge: @escaping @Sendable (DBusBridgeEvent) async -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            if let logind {
                do {
                    try logind.start()
                    group.addTask {
                        for await event in logind.events { await applyLifecycle(event) }
                    }
                } catch {
                    logger.error("cannot start the lifecycle bridge: \(error)")
                }
            }
            if let dbus {
                do {
                    try dbus.start()
                    group.addTask {
                        for await event in dbus.events { await applyBridge(event) }
                    }
                } catch {
                    logger.error("cannot start the D-Bus bridge: \(error)")
                }
            }
        }
    }

    /// Releases the sleep inhibitor and closes the bus connections; ``run`` then returns.
    func shutdown() {
        logind?.shutdown()
        dbus?.shutdown()
    }
}
