import Synchronization

/// Collects a history in memory while a test runs; any thread or task may record.
///
/// Timestamps are nanoseconds of one monotonic clock since the recorder was made. Call `invoke` just before sending a
/// request and `complete` just after its answer arrives, so that each recorded interval contains the real one. An
/// operation that is never completed stays `unknown`.
public final class HistoryRecorder: Sendable {
    /// Names an invoked operation until it is completed.
    public struct Handle: Sendable, Hashable {
        /// The operation's id in the history, which is also its index in `History.operations`.
        public let id: Int
    }

    private struct State {
        var history: History
        var completed: Set<Int> = []
    }

    private let start = ContinuousClock.now
    private let recorded: Mutex<State>

    public init(initialValues: [String: String] = [:]) {
        recorded = Mutex(State(history: History(initialValues: initialValues)))
    }

    /// The recorder's clock: nanoseconds since it was made.
    public func now() -> UInt64 {
        let elapsed = (ContinuousClock.now - start).components
        return UInt64(elapsed.seconds) * 1_000_000_000 + UInt64(elapsed.attoseconds / 1_000_000_000)
    }

    /// Records the call of an operation, at `time` or now, and returns the handle to complete it with.
    public func invoke(process: Int, key: String, _ kind: OperationKind, at time: UInt64? = nil) -> Handle {
        let time = time ?? now()
        return recorded.withLock { state in
            let handle = Handle(id: state.history.operations.count)
            state.history.operations.append(
                Operation(
                    id: handle.id, process: process, key: key, kind: kind, invoked: time, completed: nil,
                    outcome: .unknown))
            return handle
        }
    }

    /// Records the answer to an operation: its outcome, for a read the value read (nil: absent), for a write the
    /// revision it was committed at when known. An unknown outcome has no completion time. Completes a handle once.
    public func complete(
        _ handle: Handle, _ outcome: Outcome, readValue: String? = nil, revision: Int64? = nil, at time: UInt64? = nil
    ) {
        let time = outcome == .unknown ? nil : time ?? now()
        recorded.withLock { state in
            precondition(state.completed.insert(handle.id).inserted, "operation \(handle.id) completed twice")
            state.history.operations[handle.id].outcome = outcome
            state.history.operations[handle.id].completed = time
            if case .read = state.history.operations[handle.id].kind {
                state.history.operations[handle.id].readValue = readValue
            }
            state.history.operations[handle.id].revision = revision
        }
    }

    /// Records a change of etcd's history. Changes are recorded in revision order.
    public func recordChange(revision: Int64, key: String, value: String?) {
        recorded.withLock { $0.history.etcdChanges.append(EtcdChange(revision: revision, key: key, value: value)) }
    }

    /// Records an event received by a watcher, in the order that watcher received them.
    public func recordWatchEvent(observer: String, key: String, value: String?) {
        recorded.withLock { $0.history.watchEvents.append(WatchEvent(observer: observer, key: key, value: value)) }
    }

    /// What has been recorded so far.
    public var history: History { recorded.withLock { $0.history } }

    /// Writes what has been recorded so far as JSON Lines (see `History.jsonLines()`).
    public func write(to path: String) throws {
        try history.write(to: path)
    }

    /// Reads a history written by `write(to:)`.
    public static func load(from path: String) throws -> History {
        try History(contentsOf: path)
    }
}
