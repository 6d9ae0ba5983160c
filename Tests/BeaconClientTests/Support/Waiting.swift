import BeaconClient
import BeaconTestSupport
import Signals
import Synchronization

/// The first value of `signal` that satisfies `predicate`, waiting at most `timeout`.
func firstValue<S: SignalProtocol>(
    of signal: S,
    within timeout: Duration = .seconds(15),
    _ what: String = "a value",
    where predicate: @escaping (S.Element) -> Bool = { _ in true }
) async throws -> S.Element where S.Element: Sendable {
    let box = ResultBox<S.Element>()
    let subscription = signal.observe { event in
        if case .next(let value) = event, predicate(value) { box.fulfill(.success(value)) }
    }
    defer { subscription.dispose() }
    return try await box.value(within: timeout, what)
}

/// Waits until `condition` holds, asking it again after each `step`, for at most `timeout`. For state that
/// announces no event (the daemon's client list).
func waitUntil(
    within timeout: Duration = .seconds(15),
    _ what: String,
    step: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("timed out waiting for \(what)") }
        try await Task.sleep(for: step)
    }
}

/// A result delivered once from any thread and awaited with a deadline.
final class ResultBox<Value: Sendable>: Sendable {
    private struct State {
        var result: Result<Value, any Error>?
        var waiter: CheckedContinuation<Value, any Error>?
    }
    private let state = Mutex(State())

    func fulfill(_ result: Result<Value, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    /// Whether a result was delivered.
    var isFulfilled: Bool { state.withLock { $0.result != nil } }

    func value(within timeout: Duration, _ what: String) async throws -> Value {
        let timer = Task {
            try await Task.sleep(for: timeout)
            self.fulfill(.failure(TestFailure("timed out after \(timeout) waiting for \(what)")))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<Value, any Error>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

/// Collects the values of a signal, thread-safely.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Mutex<[Value]>([])
    private let subject = PassthroughSubject<[Value]>()

    func append(_ value: Value) {
        let all = storage.withLock { values in
            values.append(value)
            return values
        }
        subject.send(all)
    }

    var values: [Value] { storage.withLock { $0 } }

    /// Waits until the recorded values satisfy `predicate`.
    @discardableResult
    func wait(
        within timeout: Duration = .seconds(15),
        _ what: String,
        until predicate: @escaping ([Value]) -> Bool
    ) async throws -> [Value] {
        let box = ResultBox<[Value]>()
        let subscription = subject.observeNext { values in
            if predicate(values) { box.fulfill(.success(values)) }
        }
        defer { subscription.dispose() }
        let current = values
        if predicate(current) { return current }
        return try await box.value(within: timeout, "\(what) (recorded: \(values))")
    }
}

/// Runs `body`, failing with a ``TestFailure`` when it takes longer than `timeout` (the body is cancelled then).
func withDeadline<T: Sendable>(
    _ what: String,
    within timeout: Duration = .seconds(15),
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TestFailure("timed out after \(timeout) waiting for \(what)")
        }
        return value
    }
}
