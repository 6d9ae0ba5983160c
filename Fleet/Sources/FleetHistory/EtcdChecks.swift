// The checks that hold the operations and the watchers against etcd's revision history. Every value is written by
// one operation only, so a value in etcd's history names the write that put it there.

/// etcd's history, by key: where each value was written, and where the key was deleted, in revision order.
private struct EtcdIndex {
    var writes: [String: [String: [Int64]]] = [:]
    var deletions: [String: [Int64]] = [:]

    init(_ changes: [EtcdChange]) {
        for change in changes.sorted(by: { $0.revision < $1.revision }) {
            if let value = change.value {
                writes[change.key, default: [:]][value, default: []].append(change.revision)
            } else {
                deletions[change.key, default: []].append(change.revision)
            }
        }
    }

    /// The revisions at which `key` became `value` (nil: was deleted), ascending.
    func revisions(_ key: String, _ value: String?) -> [Int64] {
        guard let value else { return deletions[key] ?? [] }
        return writes[key]?[value] ?? []
    }
}

/// Revisions in words: `revision 5`, `revisions 5 and 9`, `revisions 5, 9 and 12`.
private func revisionList(_ revisions: [Int64]) -> String {
    let numbers = revisions.map(String.init)
    guard numbers.count > 1 else { return "revision \(numbers.first ?? "none")" }
    return "revisions \(numbers.dropLast().joined(separator: ", ")) and \(numbers.last!)"
}

func appliedTwiceAnomalies(in history: History) -> [Anomaly] {
    var changesOf: [String: [EtcdChange]] = [:]
    for change in history.etcdChanges.sorted(by: { $0.revision < $1.revision }) {
        if let value = change.value { changesOf[value, default: []].append(change) }
    }
    let writers = Dictionary(grouping: history.operations.filter { $0.kind.writtenValue != nil }) {
        $0.kind.writtenValue!
    }
    let origin = history.origin
    return changesOf.filter { $0.value.count > 1 }.sorted { $0.value[0].revision < $1.value[0].revision }.map {
        value, changes in
        let places = Dictionary(grouping: changes, by: \.key).sorted { $0.key < $1.key }.map {
            "\(quoted($0.key)) at \(revisionList($0.value.map(\.revision)))"
        }
        let written = writers[value, default: []]
        let by =
            written.isEmpty ? "" : ", written by " + written.map { $0.described(since: origin) }.joined(separator: "; ")
        return Anomaly(
            kind: .appliedTwice, key: changes[0].key,
            explanation: "\(quoted(value)) appears \(changes.count) times in etcd's history: "
                + places.joined(separator: ", ") + by,
            operations: written.map(\.id))
    }
}

func acknowledgedMissingAnomalies(in history: History) -> [Anomaly] {
    let etcd = EtcdIndex(history.etcdChanges)
    let origin = history.origin
    return history.operations.compactMap { operation in
        guard operation.outcome == .ok, let value = operation.kind.writtenValue else { return nil }
        let revisions = etcd.revisions(operation.key, value)
        let problem: String
        if revisions.isEmpty {
            problem = "etcd's history never has \(quoted(value)) for \(quoted(operation.key))"
        } else if let revision = operation.revision, !revisions.contains(revision) {
            problem = "etcd's history has \(quoted(value)) at \(revisionList(revisions)), not at revision \(revision)"
        } else {
            return nil
        }
        return Anomaly(
            kind: .acknowledgedMissing, key: operation.key,
            explanation: "\(operation.described(since: origin)) was acknowledged, but \(problem)",
            operations: [operation.id])
    }
}

func refusedAppliedAnomalies(in history: History) -> [Anomaly] {
    let etcd = EtcdIndex(history.etcdChanges)
    let origin = history.origin
    return history.operations.compactMap { operation in
        guard operation.outcome == .fail, let value = operation.kind.writtenValue else { return nil }
        let revisions = etcd.revisions(operation.key, value)
        guard !revisions.isEmpty else { return nil }
        return Anomaly(
            kind: .refusedApplied, key: operation.key,
            explanation: "\(operation.described(since: origin)) was told it failed, but etcd's history has "
                + "\(quoted(value)) at \(revisionList(revisions))",
            operations: [operation.id])
    }
}

/// For each acknowledged write A in etcd's history: the writes of the same key (acknowledged or unknown) invoked after
/// A was acknowledged must all come after A's value in etcd's history. A's value written at a revision after one of
/// them took effect is a lost update: a late application of A overwrote a later write. Reported once per A, naming the
/// first such write in etcd's order.
func realTimeOrderAnomalies(in history: History) -> [Anomaly] {
    let etcd = EtcdIndex(history.etcdChanges)
    let origin = history.origin
    var anomalies: [Anomaly] = []
    for (key, operations) in Dictionary(grouping: history.operations, by: \.key).sorted(by: { $0.key < $1.key }) {
        // Each write whose value etcd has, with the first and last revisions of that value, by invocation.
        let applied = operations.compactMap { operation -> (operation: Operation, first: Int64, last: Int64)? in
            guard operation.outcome != .fail, let value = operation.kind.writtenValue,
                let first = etcd.revisions(key, value).first, let last = etcd.revisions(key, value).last
            else { return nil }
            return (operation, first, last)
        }.sorted { $0.operation.invoked < $1.operation.invoked }
        // From each position on, the write whose value etcd wrote first.
        var firstFrom = Array(applied.indices)
        for index in applied.indices.reversed().dropFirst()
        where applied[firstFrom[index + 1]].first < applied[index].first {
            firstFrom[index] = firstFrom[index + 1]
        }
        for earlier in applied where earlier.operation.outcome == .ok {
            guard let completed = earlier.operation.completed else { continue }
            let after = applied.partitionPoint { $0.operation.invoked <= completed }
            guard after < applied.count, case let later = applied[firstFrom[after]], later.first < earlier.last else {
                continue
            }
            let (a, b) = (earlier.operation, later.operation)
            anomalies.append(
                Anomaly(
                    kind: .lostUpdate, key: key,
                    explanation: "\(a.described(since: origin)) was acknowledged before "
                        + "\(b.described(since: origin)) was invoked, yet etcd wrote \(quoted(a.kind.writtenValue)) "
                        + "at revision \(earlier.last), after \(quoted(b.kind.writtenValue)) at revision "
                        + "\(later.first): the earlier write overwrote the later one",
                    operations: [a.id, b.id]))
        }
    }
    return anomalies
}

/// A change in words: a quoted value, or `a deletion`.
private func change(_ value: String?) -> String {
    value == nil ? "a deletion" : quoted(value)
}

/// For each watcher and key, matches the events in the order received to etcd's changes of the key: a value to
/// the first revision after the last match at which it was written, a deletion to the first deletion after it.
func watchOrderAnomalies(in history: History) -> [Anomaly] {
    let etcd = EtcdIndex(history.etcdChanges)
    var observers: [String] = []
    var events: [String: [String: [String?]]] = [:]
    for event in history.watchEvents {
        if events[event.observer] == nil { observers.append(event.observer) }
        events[event.observer, default: [:]][event.key, default: []].append(event.value)
    }
    var anomalies: [Anomaly] = []
    for observer in observers {
        for (key, values) in events[observer]!.sorted(by: { $0.key < $1.key }) {
            var matched: (revision: Int64, value: String?)?
            for (position, value) in values.enumerated() {
                let revisions = etcd.revisions(key, value)
                let event = "\(quoted(observer))'s event \(position + 1) for \(quoted(key)), \(change(value))"
                if let revision = revisions.first(where: { $0 > matched?.revision ?? .min }) {
                    matched = (revision, value)
                } else if let matched, !revisions.isEmpty {
                    anomalies.append(
                        Anomaly(
                            kind: .watchOutOfOrder, key: key,
                            explanation: "\(event) (etcd's \(revisionList(revisions))), came after "
                                + "\(change(matched.value)) (revision \(matched.revision)): it went backwards"))
                } else {
                    anomalies.append(
                        Anomaly(
                            kind: .watchUnknownChange, key: key,
                            explanation: "\(event), is a change etcd's history does not have"))
                }
            }
        }
    }
    return anomalies
}
