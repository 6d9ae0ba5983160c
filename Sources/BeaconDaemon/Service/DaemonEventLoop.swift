import BeaconEventLoop

/// The daemon's one event loop: clients, the store, timers and, in `beacond`, Swift concurrency's jobs run on it, on
/// a thread of its own.
public enum DaemonEventLoop {
    public static let shared: EpollEventLoop = {
        do {
            return try EpollEventLoop.start(name: "beacond")
        } catch {
            fatalError("cannot start the event loop: \(error)")
        }
    }()
}
