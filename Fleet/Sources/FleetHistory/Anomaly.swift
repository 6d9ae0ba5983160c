/// The checks a history is put through.
public enum HistoryCheck: String, Sendable, Hashable, CaseIterable {
    /// Each key's operations, on their own, are linearizable for a register with compare-and-set.
    case linearizable = "linearizable"
    /// No written value appears in more than one change of etcd's history.
    case appliedTwice = "applied-twice"
    /// Every acknowledged write is in etcd's history, at its revision when one was recorded.
    case acknowledgedMissing = "acknowledged-missing"
    /// No write that was told it failed is in etcd's history.
    case refusedApplied = "refused-applied"
    /// A write acknowledged before another write of the same key was invoked is before it in etcd's history.
    case realTimeOrder = "real-time order"
    /// Each watcher sees each key's changes in etcd's order, and only changes etcd had.
    case watchOrder = "watch order"

    /// The kinds of anomaly the check reports.
    public var anomalyKinds: [AnomalyKind] { AnomalyKind.allCases.filter { $0.check == self } }

    /// Runs the check.
    public func anomalies(in history: History, options: CheckOptions = CheckOptions()) -> [Anomaly] {
        switch self {
        case .linearizable: return linearizabilityAnomalies(in: history, options: options)
        case .appliedTwice: return appliedTwiceAnomalies(in: history)
        case .acknowledgedMissing: return acknowledgedMissingAnomalies(in: history)
        case .refusedApplied: return refusedAppliedAnomalies(in: history)
        case .realTimeOrder: return realTimeOrderAnomalies(in: history)
        case .watchOrder: return watchOrderAnomalies(in: history)
        }
    }
}

/// What a check can find.
public enum AnomalyKind: String, Sendable, Hashable, CaseIterable {
    /// No order of the key's operations within their intervals explains what they saw.
    case notLinearizable = "not linearizable"
    /// The linearizability search ran out of steps before it could decide.
    case undecided = "undecided"
    /// A value was written more than once in etcd's history.
    case appliedTwice = "applied twice"
    /// An acknowledged write is not in etcd's history, or not at the revision it was acknowledged with.
    case acknowledgedMissing = "acknowledged but missing"
    /// A write told it failed is in etcd's history.
    case refusedApplied = "refused but applied"
    /// An acknowledged write took effect after a write invoked once it was acknowledged, overwriting it.
    case lostUpdate = "lost update"
    /// A watcher received a change that comes before, or is, one it had already received.
    case watchOutOfOrder = "watch out of order"
    /// A watcher received a change that etcd's history does not have.
    case watchUnknownChange = "watch saw unknown change"

    /// The check that reports this kind.
    public var check: HistoryCheck {
        switch self {
        case .notLinearizable, .undecided: return .linearizable
        case .appliedTwice: return .appliedTwice
        case .acknowledgedMissing: return .acknowledgedMissing
        case .refusedApplied: return .refusedApplied
        case .lostUpdate: return .realTimeOrder
        case .watchOutOfOrder, .watchUnknownChange: return .watchOrder
        }
    }
}

/// One thing found wrong with a history.
public struct Anomaly: Sendable, Hashable, CustomStringConvertible {
    public var kind: AnomalyKind
    /// The key it concerns.
    public var key: String
    /// What is wrong, in words, naming the operations, values and revisions involved.
    public var explanation: String
    /// The ids of the operations involved, if any.
    public var operations: [Int]

    public init(kind: AnomalyKind, key: String, explanation: String, operations: [Int] = []) {
        self.kind = kind
        self.key = key
        self.explanation = explanation
        self.operations = operations
    }

    public var description: String { "\(kind.rawValue): \(explanation)" }
}

/// Settings of the checks.
public struct CheckOptions: Sendable, Hashable {
    /// How many steps the linearizability search may take for one key before it reports the key undecided.
    public var stepBudget: Int

    public init(stepBudget: Int = 2_000_000) {
        self.stepBudget = stepBudget
    }
}

extension History {
    /// Runs every check, in the order of `HistoryCheck.allCases`.
    public func anomalies(options: CheckOptions = CheckOptions()) -> [Anomaly] {
        HistoryCheck.allCases.flatMap { $0.anomalies(in: self, options: options) }
    }
}
