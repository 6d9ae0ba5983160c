/// What one call asked of a key. Every value written is unique across the whole history, so a value names the
/// operation that wrote it.
public enum OperationKind: Sendable, Hashable {
    /// An unconditional write of the value.
    case set(String)
    /// An unconditional delete.
    case unset
    /// Writes `value` (nil: deletes the key) only if the key holds `expected` (nil: only if the key is absent).
    case compareAndSet(expected: String?, value: String?)
    /// A linearizable read; its result is `Operation.readValue`.
    case read

    /// The value this operation writes, nil for a read or a delete.
    public var writtenValue: String? {
        switch self {
        case .set(let value): return value
        case .compareAndSet(_, let value): return value
        case .unset, .read: return nil
        }
    }

    /// The value a compare-and-set expects, nil for other operations.
    public var expectedValue: String? {
        if case .compareAndSet(let expected, _) = self { return expected }
        return nil
    }

    /// Whether the operation can change the key.
    public var isWrite: Bool {
        if case .read = self { return false }
        return true
    }

    /// The operation's name in the recorded format: `set`, `unset`, `cas` or `read`.
    public var name: String {
        switch self {
        case .set: return "set"
        case .unset: return "unset"
        case .compareAndSet: return "cas"
        case .read: return "read"
        }
    }
}

/// What the caller learnt about an operation.
public enum Outcome: String, Sendable, Hashable, CaseIterable {
    /// Acknowledged: the operation took effect between its invocation and its completion.
    case ok
    /// Definitely not applied, and never will be: an error before the write was sent, a compare-and-set that lost its
    /// compare, an unset of an absent key.
    case fail
    /// May have taken effect at any time after the invocation, or never: a timeout, a lost connection, a call that
    /// never returned.
    case unknown
}

/// One call by one process on one key, with the test's monotonic timestamps in nanoseconds.
public struct Operation: Sendable, Hashable, Identifiable {
    /// Unique within the history.
    public var id: Int
    /// The client that made the call. A process makes one call at a time.
    public var process: Int
    public var key: String
    public var kind: OperationKind
    /// When the call was made.
    public var invoked: UInt64
    /// When the answer arrived; nil when the outcome is unknown. An acknowledged operation without one is taken to
    /// have completed at the end of time.
    public var completed: UInt64?
    public var outcome: Outcome
    /// For an acknowledged read, the value read (nil: the key was absent). Nil for every other operation.
    public var readValue: String?
    /// For an acknowledged write, the etcd revision it was committed at, when the answer said.
    public var revision: Int64?

    public init(
        id: Int, process: Int, key: String, kind: OperationKind, invoked: UInt64, completed: UInt64?,
        outcome: Outcome, readValue: String? = nil, revision: Int64? = nil
    ) {
        self.id = id
        self.process = process
        self.key = key
        self.kind = kind
        self.invoked = invoked
        self.completed = completed
        self.outcome = outcome
        self.readValue = readValue
        self.revision = revision
    }
}

/// One change in etcd's revision history: `value` nil is a deletion.
public struct EtcdChange: Sendable, Hashable {
    public var revision: Int64
    public var key: String
    public var value: String?

    public init(revision: Int64, key: String, value: String?) {
        self.revision = revision
        self.key = key
        self.value = value
    }
}

/// One event received by one watcher: `value` nil is a deletion.
public struct WatchEvent: Sendable, Hashable {
    /// Names the watcher, for example by the machine it runs on.
    public var observer: String
    public var key: String
    public var value: String?

    public init(observer: String, key: String, value: String?) {
        self.observer = observer
        self.key = key
        self.value = value
    }
}

/// Everything a fault-injection run recorded: the operations, etcd's revision history (every change of every key,
/// in revision order) and, for each watcher, the events in the order it received them.
public struct History: Sendable, Hashable {
    public var operations: [Operation]
    public var etcdChanges: [EtcdChange]
    public var watchEvents: [WatchEvent]
    /// The value of a key before the first operation; a key not named here starts absent.
    public var initialValues: [String: String]

    public init(
        operations: [Operation] = [], etcdChanges: [EtcdChange] = [], watchEvents: [WatchEvent] = [],
        initialValues: [String: String] = [:]
    ) {
        self.operations = operations
        self.etcdChanges = etcdChanges
        self.watchEvents = watchEvents
        self.initialValues = initialValues
    }

    /// Every key that an operation, a change or an event names, sorted.
    public var keys: [String] {
        var keys = Set(operations.map(\.key))
        keys.formUnion(etcdChanges.map(\.key))
        keys.formUnion(watchEvents.map(\.key))
        return keys.sorted()
    }

    /// The earliest invocation, from which explanations measure time.
    var origin: UInt64 { operations.lazy.map(\.invoked).min() ?? 0 }
}

// MARK: - Words

/// A value in an explanation: quoted, or `absent`.
func quoted(_ value: String?) -> String {
    value.map { "\"\($0)\"" } ?? "absent"
}

/// A timestamp in an explanation: milliseconds since `origin`.
func milliseconds(_ time: UInt64, since origin: UInt64) -> String {
    let microseconds = Int64(bitPattern: time &- origin) / 1000
    let sign = microseconds < 0 ? "-" : ""
    let fraction = String(abs(microseconds) % 1000)
    return "\(sign)\(abs(microseconds) / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) ms"
}

extension Operation {
    /// The operation in words, for example `process 2 set "k" to "v7" (ok, 1.250 ms to 1.900 ms)`.
    func described(since origin: UInt64) -> String {
        let action: String
        switch kind {
        case .set(let value): action = "set \(quoted(key)) to \(quoted(value))"
        case .unset: action = "unset \(quoted(key))"
        case .compareAndSet(let expected, let value):
            action = "compare-and-set \(quoted(key)) from \(quoted(expected)) to \(quoted(value))"
        case .read: action = outcome == .ok ? "read \(quoted(readValue)) from \(quoted(key))" : "read \(quoted(key))"
        }
        let from = milliseconds(invoked, since: origin)
        let interval = completed.map { "\(from) to \(milliseconds($0, since: origin))" } ?? "from \(from)"
        let revision = self.revision.map { ", revision \($0)" } ?? ""
        return "process \(process) \(action) (\(outcome.rawValue)\(revision), \(interval))"
    }
}

extension Array {
    /// The index of the first element for which `isBefore` is false, in an array where it is true for a prefix.
    func partitionPoint(_ isBefore: (Element) -> Bool) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if isBefore(self[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
