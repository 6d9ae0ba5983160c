import BeaconSystemd
import Logging
import NIOCore

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

    /// Sends `WATCHDOG=1` from `eventLoop` at the interval systemd asked for, when it asked; returns the task to
    /// cancel at shutdown. The pings come from the loop that serves clients, so a loop that is stuck stops them
    /// and systemd restarts the daemon.
    func startWatchdog(on eventLoop: any EventLoop) -> RepeatedTask? {
        guard let notifier, let interval = Watchdog.pingInterval() else { return nil }
        let delay = TimeAmount(interval)
        logger.debug("watchdog pings from the event loop", metadata: ["intervalUsec": "\(delay.nanoseconds / 1000)"])
        return eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: delay) { _ in
            notifier.watchdogPing()
        }
    }
}
