import BeaconSystemd
import Logging

/// The daemon's conversation with the service manager: readiness, status, reload and stop notices, socket
/// activation and the watchdog. Every call is a no-op when the daemon was not started by systemd.
struct SystemdIntegration: Sendable {
    let notifier: SystemdNotifier?
    let logger: Logger

    init(logger: Logger) {
        self.notifier = SystemdNotifier.fromEnvironment()
        self.logger = logger
    }

    /// The first socket passed by socket activation, if any.
    func listenDescriptor() -> Int32? {
        let descriptors = SocketActivation.listenFileDescriptors()
        if descriptors.count > 1 {
            logger.warning("socket activation passed \(descriptors.count) sockets; using the first")
        }
        return descriptors.first
    }

    func ready(status: String?) {
        notifier?.ready()
        if let status { notifier?.status(status) }
    }

    func status(_ text: String) {
        notifier?.status(text)
    }

    func reloading() {
        notifier?.reloading()
    }

    func stopping() {
        notifier?.stopping()
    }

    /// The watchdog service when systemd asked for pings, else `nil`.
    static func watchdogService() -> WatchdogService? {
        guard let interval = Watchdog.pingInterval(), let notifier = SystemdNotifier.fromEnvironment() else {
            return nil
        }
        return WatchdogService(interval: interval, notifier: notifier)
    }
}

/// Sends `WATCHDOG=1` at the interval systemd asked for, until graceful shutdown.
public struct WatchdogService: Service {
    let interval: Duration
    let notifier: SystemdNotifier

    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                notifier.watchdogPing()
                try await Task.sleep(for: interval)
            }
        }
    }
}
