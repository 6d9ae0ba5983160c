import Synchronization

/// Runs asynchronous operations one after another, in the order they were enqueued; an operation's error goes to
/// ``onError``. The task that runs them starts with the first operation and ends after ``finish()``.
final class SerialCallQueue: Sendable {
    typealias Operation = @Sendable () async throws(BeaconError) -> Void

    private struct State {
        var continuation: AsyncStream<Operation>.Continuation?
        var finished = false
    }

    private let state = Mutex(State())
    private let onError: @Sendable (BeaconError) -> Void

    init(onError: @escaping @Sendable (BeaconError) -> Void) {
        self.onError = onError
    }

    /// Queues `operation`; ignored after ``finish()``.
    func enqueue(_ operation: @escaping Operation) {
        let continuation = state.withLock { state -> AsyncStream<Operation>.Continuation? in
            if state.finished { return nil }
            if let continuation = state.continuation { return continuation }
            let (stream, continuation) = AsyncStream.makeStream(of: Operation.self)
            state.continuation = continuation
            let onError = self.onError
            Task {
                for await operation in stream {
                    do throws(BeaconError) {
                        try await operation()
                    } catch {
                        onError(error)
                    }
                }
            }
            return continuation
        }
        continuation?.yield(operation)
    }

    /// Lets the queued operations run and accepts no more.
    func finish() {
        let continuation = state.withLock { state in
            state.finished = true
            return state.continuation
        }
        continuation?.finish()
    }
}
