import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the daemon's configuration on SIGHUP.
public struct ReloadService: Service {
    let daemon: BeaconDaemonService
    let load: @Sendable () async throws -> DaemonConfiguration

    public init(daemon: BeaconDaemonService, load: @escaping @Sendable () async throws -> DaemonConfiguration) {
        self.daemon = daemon
        self.load = load
    }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            await daemon.reload(load)
        }
    }
}
