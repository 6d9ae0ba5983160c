import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reloads the daemon's configuration on SIGHUP.
public struct ReloadService: Service {
    let daemon: BeaconDaemonService
    let load: @Sendable () async throws -> DaemonConfiguration
    /// Opened with the service, before the daemon serves.
    let hangupSignals: SignalDescriptor

    /// Throws when no signalfd can be opened.
    public init(daemon: BeaconDaemonService, load: @escaping @Sendable () async throws -> DaemonConfiguration) throws {
        self.daemon = daemon
        self.load = load
        hangupSignals = try SignalDescriptor([SIGHUP])
    }

    public func run() async throws {
        // SIGHUP, blocked by the program, waits pending until the daemon has started.
        await daemon.started()
        if Task.isCancelled {
            hangupSignals.close()
            return
        }
        let hangups = try await signalStream(hangupSignals)
        let daemon = self.daemon
        let load = self.load
        try? await cancelWhenGracefulShutdown {
            for await _ in hangups {
                await daemon.reload(load)
            }
        }
    }
}
