// Linearizability is local: a history is linearizable when each key's operations are, so each key is checked on its
// own against a register with compare-and-set.
//
// The search follows Wing and Gong, with Lowe's memoisation. The operations' calls and returns form a doubly linked
// list in time order. At each node of the search, the calls before the first remaining return are the operations
// that may take effect next; the search lets one take effect, lifts its call and return out of the list and goes on
// from there; when none can, it backtracks. A set of (operations taken effect, register value) pairs already explored
// keeps it from exploring a node twice.
//
// What keeps long histories fast:
// - A read that matches the register is taken at once, without trying the alternatives: taking it later could not
//   make any other order possible, since it changes nothing.
// - The other candidates are tried in the order etcd's history suggests, then by when their values were first
//   observed (see `SearchStep.rank` and `hint`), so a linearizable history is usually confirmed without
//   backtracking. The order only changes how soon an answer is found.
// - The key's history is cut into segments wherever no operation that must take effect is in flight. A search per
//   segment yields the configurations (register value, optional operations not yet taken effect) in which the segment
//   can end, one at a time; the next segment starts from each in turn, and asks for another only when it fails. The
//   bitsets stay as small as a segment.
// - Unacknowledged operations are pruned using the uniqueness of written values (see `RegisterHistory.init`).

/// `shortcuts` false skips the checks made without a search (`RegisterHistory.unexplainedObservation`), to test the
/// search on its own.
func linearizabilityAnomalies(in history: History, options: CheckOptions, shortcuts: Bool = true) -> [Anomaly] {
    let origin = history.origin
    // Without any etcd history there is no evidence that an unacknowledged write never applied.
    let etcdChanges: [String: [EtcdChange]]? =
        history.etcdChanges.isEmpty
        ? nil : Dictionary(grouping: history.etcdChanges.sorted { $0.revision < $1.revision }, by: \.key)
    var anomalies: [Anomaly] = []
    for (key, operations) in Dictionary(grouping: history.operations, by: \.key).sorted(by: { $0.key < $1.key }) {
        let register = RegisterHistory(
            operations: operations, initialValue: history.initialValues[key],
            etcdChanges: etcdChanges.map { $0[key] ?? [] })
        switch register.check(stepBudget: options.stepBudget, shortcuts: shortcuts) {
        case .linearizable:
            break
        case .notLinearizable(let placed, let blocking, let states):
            let operation = register.operations[register.steps[blocking].source]
            let values = states.map { quoted(register.values[$0]) }.joined(separator: " or ")
            let held = values.isEmpty ? "" : "; the key could then hold only \(values)"
            anomalies.append(
                Anomaly(
                    kind: .notLinearizable, key: key,
                    explanation: "\(quoted(key)): \(placed) of the \(register.requiredCount) operations that must take "
                        + "effect can be put in order, but then no order lets \(operation.described(since: origin)) "
                        + "take effect in time\(held)",
                    operations: [operation.id]))
        case .unexplained(let observer, let writer, let overwriter):
            let described = { register.operations[register.steps[$0].source].described(since: origin) }
            let operation = register.operations[register.steps[observer].source]
            let value = operation.kind == .read ? operation.readValue : operation.kind.expectedValue
            let reason: String
            if let writer, let overwriter {
                reason =
                    "\(quoted(value)) was written only by \(described(writer)), and \(described(overwriter)) "
                    + "overwrote it before this was invoked"
            } else if let writer {
                reason = "\(quoted(value)) was written only by \(described(writer)), invoked after this returned"
            } else {
                reason =
                    "no operation that can have taken effect wrote \(quoted(value)) (failed operations are left "
                    + "out, and so are unknown ones whose value etcd's history never has)"
            }
            anomalies.append(
                Anomaly(
                    kind: .notLinearizable, key: key,
                    explanation: "\(quoted(key)): \(operation.described(since: origin)) cannot be explained: \(reason)",
                    operations: [operation.id]
                        + [writer, overwriter].compactMap { $0 }.map {
                            register.operations[register.steps[$0].source].id
                        }))
        case .undecided(let placed, let blocking, let steps, let from):
            let stop = blocking.map {
                ", the furthest stopping before "
                    + register.operations[register.steps[$0].source].described(since: origin)
            }
            anomalies.append(
                Anomaly(
                    kind: .undecided, key: key,
                    explanation: "\(quoted(key)): the search gave up after \(steps) steps, among the operations "
                        + "invoked from \(milliseconds(from, since: origin)), having put \(placed) of the "
                        + "\(register.requiredCount) operations that must take effect in order\(stop ?? "")"))
        }
    }
    return anomalies
}

/// One operation of the register, as the search sees it. Values are numbered within the key; 0 is absent.
enum RegisterStep: Hashable {
    /// `set` (to a value) or `unset` (to 0).
    case write(Int)
    case compareAndSet(expected: Int, new: Int)
    case read(Int)

    /// The register's value after this operation takes effect on `state`, or nil when it cannot take effect there.
    func apply(to state: Int) -> Int? {
        switch self {
        case .write(let new): return new
        case .compareAndSet(let expected, let new): return state == expected ? new : nil
        case .read(let value): return state == value ? state : nil
        }
    }

    var isRead: Bool {
        if case .read = self { return true }
        return false
    }

    var isDelete: Bool {
        switch self {
        case .write(let new), .compareAndSet(_, let new): return new == 0
        case .read: return false
        }
    }
}

/// An operation in the search.
struct SearchStep {
    /// Its index in `RegisterHistory.operations`.
    var source: Int
    var step: RegisterStep
    var invoked: UInt64
    /// When it must have taken effect by; `UInt64.max` for none.
    var deadline: UInt64
    /// Whether it must take effect (acknowledged, or observed); the others may take effect after their invocation
    /// or not at all.
    var required: Bool
    /// For an optional operation: the previous optional operation with the same step. Either of two such operations
    /// can stand for the other, so the later one is tried only once the earlier has taken effect.
    var twin: Int? = nil
    /// The etcd revision at which the operation probably took effect, to try candidates in: exact for a write whose
    /// value etcd has or whose revision was acknowledged; for a delete, etcd's first deletion after every revision
    /// acknowledged before the delete was invoked. 0 without etcd's history.
    var rank: Int64 = 0
    /// Candidates of equal rank are tried by this time: for a write whose value is read or compared against, the
    /// earliest invocation of those; for a write of a value nothing observes, 0 (it is best placed just before
    /// another write); for other operations, the deadline.
    var hint: UInt64 = 0
}
