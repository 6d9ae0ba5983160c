import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A long-running part of the daemon, run by ``ServiceRunner``.
public protocol Service: Sendable {
    /// Runs until graceful shutdown (``gracefulShutdown()``) or cancellation.
    func run() async throws
}

/// Something that happens once, awaited by any number of tasks: the graceful shutdown of a ``ServiceRunner``, the
/// end of the daemon's start-up.
final class Latch: Sendable {
    private struct State {
        var triggered = false
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Makes it happen: every waiter returns.
    func trigger() {
        let waiters = state.withLock { state in
            guard !state.triggered else { return [CheckedContinuation<Void, Never>]() }
            state.triggered = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when it has happened or the task is cancelled.
    func wait() async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.triggered || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// The graceful shutdown of a ``ServiceRunner``: triggered once, awaited by its services.
enum GracefulShutdown {
    /// The shutdown of the services the current task belongs to.
    @TaskLocal static var current: Latch?
}

/// Returns when the graceful shutdown of the current service starts; throws `CancellationError` if the task is
/// cancelled first.
func gracefulShutdown() async throws {
    if let shutdown = GracefulShutdown.current {
        await shutdown.wait()
    } else {
        // Not run by a ServiceRunner: only cancellation ends the wait.
        await Latch().wait()
    }
    try Task.checkCancellation()
}

/// Runs `operation` and cancels it when the graceful shutdown of the current service starts.
func cancelWhenGracefulShutdown(_ operation: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            try await operation()
            return true
        }
        group.addTask {
            try? await gracefulShutdown()
            return false
        }
        defer { group.cancelAll() }
        while let finished = try await group.next() {
            if finished { return }
            group.cancelAll()
        }
    }
}

/// Runs services together until SIGTERM or SIGINT starts a graceful shutdown; a service that throws cancels the
/// others.
struct ServiceRunner {
    struct FinishedUnexpectedly: Error, CustomStringConvertible {
        var service: String
        var description: String { "the service \(service) finished before shutdown" }
    }

    var services: [any Service]
    var logger: Logger
    /// Awaited before the signals are read. A program that runs the daemon keeps them blocked
    /// (``blockDaemonSignals()``), so one that arrives earlier waits, pending, and is read then.
    var handleSignalsAfter: @Sendable () async -> Void = {}

    func run() async throws {
        // Opened before any service starts (the signals wait, pending, until read).
        let stopSignals = try SignalDescriptor([SIGTERM, SIGINT])
        let shutdown = Latch()
        try await GracefulShutdown.$current.withValue(shutdown) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                let logger = self.logger
                let handleSignalsAfter = self.handleSignalsAfter
                group.addTask {
                    await handleSignalsAfter()
                    if Task.isCancelled {
                        stopSignals.close()
                        return
                    }
                    for await number in try await signalStream(stopSignals) {
                        logger.debug("shutting down on signal", metadata: ["signal": "\(number)"])
                        shutdown.trigger()
                        return
                    }
                }
                for service in services {
                    group.addTask {
                        try await service.run()
                        if !shutdown.isTriggered {
                            throw FinishedUnexpectedly(service: "\(type(of: service))")
                        }
                    }
                }
                do {
                    while try await group.next() != nil {}
                } catch {
                    group.cancelAll()
                    throw error
                }
            }
        }
    }
}
