import FleetHistory

/// Builds small histories by hand: times are in nanoseconds, the key is "k" unless named.
struct Recording {
    var history = History()

    /// Appends an operation and returns its id.
    @discardableResult
    mutating func op(
        _ process: Int, _ kind: OperationKind, _ invoked: UInt64, _ completed: UInt64?, _ outcome: Outcome = .ok,
        read: String? = nil, revision: Int64? = nil, key: String = "k"
    ) -> Int {
        let id = history.operations.count
        history.operations.append(
            Operation(
                id: id, process: process, key: key, kind: kind, invoked: invoked,
                completed: outcome == .unknown ? nil : completed, outcome: outcome, readValue: read,
                revision: revision))
        return id
    }

    /// Appends an acknowledged read of `value`.
    @discardableResult
    mutating func read(_ process: Int, _ value: String?, _ invoked: UInt64, _ completed: UInt64, key: String = "k")
        -> Int
    {
        op(process, .read, invoked, completed, read: value, key: key)
    }

    /// Appends etcd's changes, numbered from revision 1 on; nil is a deletion.
    mutating func etcd(_ values: String?..., key: String = "k") {
        for value in values {
            let revision = (history.etcdChanges.last?.revision ?? 0) + 1
            history.etcdChanges.append(EtcdChange(revision: revision, key: key, value: value))
        }
    }

    /// Appends the events a watcher received, in order; nil is a deletion.
    mutating func watch(_ observer: String, _ values: String?..., key: String = "k") {
        history.watchEvents += values.map { WatchEvent(observer: observer, key: key, value: $0) }
    }

    func anomalies(_ check: HistoryCheck, stepBudget: Int = 1_000_000) -> [Anomaly] {
        check.anomalies(in: history, options: CheckOptions(stepBudget: stepBudget))
    }

    var all: [Anomaly] { history.anomalies() }
}
