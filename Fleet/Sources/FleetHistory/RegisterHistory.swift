/// One key's operations prepared for the search.
struct RegisterHistory {
    enum Verdict {
        case linearizable
        /// `placed` operations that must take effect could be put in order; `blocking` (an index in `steps`) could
        /// not follow them while the register held one of `states`.
        case notLinearizable(placed: Int, blocking: Int, states: [Int])
        /// `observer` (an index in `steps`) saw a value that its only `writer` cannot have written by then, or that
        /// `overwriter` must have overwritten; no writer: a value that nothing taking part writes.
        case unexplained(observer: Int, writer: Int?, overwriter: Int?)
        /// The search ran out of steps; the furthest it got was `placed` operations, before `blocking`.
        case undecided(placed: Int, blocking: Int?, steps: Int, from: UInt64)
    }

    /// A point between two segments: the register's value and the optional operations (indices in `steps`) that
    /// have not taken effect, ascending.
    struct Configuration: Hashable {
        var state: Int
        var pending: [Int]
    }

    let operations: [Operation]
    /// The operations that take part, ordered by invocation.
    private(set) var steps: [SearchStep] = []
    /// The values by number; 0 is absent.
    private(set) var values: [String?] = [nil]
    let initialState: Int
    let requiredCount: Int
    /// For each value number, the index in `steps` of its only writer, when it has exactly one.
    private var writer: [Int: Int] = [:]

    /// Prepares `operations` (all on one key) for the search; `etcdChanges` is etcd's history of the key in revision
    /// order, nil when the history has no etcd changes at all.
    ///
    /// A failed operation had no effect and is left out, and so is a read whose outcome is unknown. An unknown
    /// operation is left out, or made to take effect by a deadline, using the fact that every value is written by one
    /// operation only:
    /// - If etcd's history never has its value, it never applied: a value is written once, so had it applied, etcd's
    ///   history would show it. This does not hold for a delete, which writes no value of its own; deletes are kept.
    /// - If an operation that must take effect reads its value, or compares against it, it took effect before that
    ///   operation's completion, since nothing else writes that value: it becomes required, with that deadline.
    /// - If no operation at all reads its value or compares against it, whether it took effect changes nothing any
    ///   other operation could see: a blind write of an unobserved value, it is left out.
    /// What remains optional (deletes, mostly) may take effect at any time after its invocation, or not at all.
    init(operations: [Operation], initialValue: String?, etcdChanges: [EtcdChange]?) {
        self.operations = operations
        var numbers: [String: Int] = [:]
        var values: [String?] = [nil]
        func number(_ value: String?) -> Int {
            guard let value else { return 0 }
            if let known = numbers[value] { return known }
            values.append(value)
            numbers[value] = values.count - 1
            return values.count - 1
        }
        initialState = number(initialValue)
        var writers: [String: Int] = [:]
        for operation in operations where operation.outcome != .fail {
            if let value = operation.kind.writtenValue { writers[value, default: 0] += 1 }
        }
        func isUnique(_ value: String?) -> Bool { value.map { writers[$0] == 1 && $0 != initialValue } ?? false }
        var firstRevision: [String: Int64] = [:]
        for change in etcdChanges ?? [] where change.value != nil && firstRevision[change.value!] == nil {
            firstRevision[change.value!] = change.revision
        }

        var candidates: [SearchStep] = []
        for (index, operation) in operations.enumerated() {
            let step: RegisterStep
            switch operation.kind {
            case .set(let value): step = .write(number(value))
            case .unset: step = .write(0)
            case .compareAndSet(let expected, let value):
                step = .compareAndSet(expected: number(expected), new: number(value))
            case .read: step = .read(number(operation.readValue))
            }
            switch operation.outcome {
            case .fail:
                continue
            case .ok:
                let deadline = max(operation.completed ?? .max, operation.invoked)
                candidates.append(
                    SearchStep(
                        source: index, step: step, invoked: operation.invoked, deadline: deadline, required: true))
            case .unknown:
                if case .read = operation.kind { continue }
                if let value = operation.kind.writtenValue, etcdChanges != nil, firstRevision[value] == nil { continue }
                // A compare-and-set from absent to absent changes nothing, and one from a value no operation writes
                // can never hold its compare.
                if case .compareAndSet(let expected, let value) = operation.kind,
                    expected == nil ? value == nil : writers[expected!] == nil && expected != initialValue
                {
                    continue
                }
                candidates.append(
                    SearchStep(source: index, step: step, invoked: operation.invoked, deadline: .max, required: false))
            }
        }

        // Who observes each value: reads of it and compares against it.
        var observers: [Int: [Int]] = [:]
        for (index, candidate) in candidates.enumerated() {
            switch candidate.step {
            case .read(let value) where value != 0, .compareAndSet(let value, _) where value != 0:
                observers[value, default: []].append(index)
            default: break
            }
        }
        let uniqueUnknown = candidates.indices.filter {
            !candidates[$0].required && isUnique(operations[candidates[$0].source].kind.writtenValue)
        }
        var changed = true
        while changed {
            changed = false
            for index in uniqueUnknown {
                let value = number(operations[candidates[index].source].kind.writtenValue)
                let deadline =
                    observers[value, default: []].lazy.filter { candidates[$0].required }
                    .map { candidates[$0].deadline }.min() ?? .max
                if deadline < candidates[index].deadline && deadline >= candidates[index].invoked {
                    candidates[index].deadline = deadline
                    candidates[index].required = true
                    changed = true
                }
            }
        }
        let unobserved = Set(
            uniqueUnknown.filter {
                !candidates[$0].required
                    && observers[number(operations[candidates[$0].source].kind.writtenValue)] == nil
            })

        var lastTwin: [RegisterStep: Int] = [:]
        for (index, candidate) in candidates.enumerated().sorted(by: { ($0.1.invoked, $0.0) < ($1.1.invoked, $1.0) })
        where !unobserved.contains(index) {
            var step = candidate
            if !step.required {
                step.twin = lastTwin[step.step]
                lastTwin[step.step] = steps.count
            }
            if let value = operations[step.source].kind.writtenValue, isUnique(value) {
                writer[number(value)] = steps.count
            }
            steps.append(step)
        }
        self.values = values
        requiredCount = steps.count(where: \.required)
        var firstObserved: [Int: UInt64] = [:]
        for step in steps {
            switch step.step {
            case .read(let value) where value != 0, .compareAndSet(let value, _) where value != 0:
                firstObserved[value] = min(firstObserved[value] ?? .max, step.invoked)
            default: break
            }
        }
        for index in steps.indices {
            let written = operations[steps[index].source].kind.writtenValue.flatMap { numbers[$0] }
            steps[index].hint = written.map { firstObserved[$0] ?? 0 } ?? steps[index].deadline
        }
        if let etcdChanges { rankSteps(firstRevision: firstRevision, etcdChanges: etcdChanges) }
    }

    /// Sets each step's `rank`.
    private mutating func rankSteps(firstRevision: [String: Int64], etcdChanges: [EtcdChange]) {
        func exact(_ step: SearchStep) -> Int64? {
            let operation = operations[step.source]
            if operation.outcome == .ok, let revision = operation.revision { return revision }
            return operation.kind.writtenValue.flatMap { firstRevision[$0] }
        }
        // The revisions of acknowledged operations, by completion, with the largest so far: a lower bound for any
        // operation invoked after that completion.
        var known = steps.compactMap { step -> (completed: UInt64, revision: Int64)? in
            guard operations[step.source].outcome == .ok, let completed = operations[step.source].completed,
                let revision = exact(step)
            else { return nil }
            return (completed, revision)
        }
        known.sort { $0.completed < $1.completed }
        let deletions = etcdChanges.filter { $0.value == nil }.map(\.revision)
        // Steps are in invocation order, so the bound only grows: both lists are walked once.
        var (bound, knownBefore, deletionsBefore): (Int64, Int, Int) = (0, 0, 0)
        for index in steps.indices {
            if let revision = exact(steps[index]) {
                steps[index].rank = revision
                continue
            }
            while knownBefore < known.count && known[knownBefore].completed < steps[index].invoked {
                bound = max(bound, known[knownBefore].revision)
                knownBefore += 1
            }
            while deletionsBefore < deletions.count && deletions[deletionsBefore] <= bound { deletionsBefore += 1 }
            let nextDeletion = deletionsBefore < deletions.count ? deletions[deletionsBefore] : bound
            steps[index].rank = steps[index].step.isDelete ? nextDeletion : bound
        }
    }

    /// Searches for an order, spending at most `stepBudget` steps.
    func check(stepBudget: Int, shortcuts: Bool = true) -> Verdict {
        if shortcuts, let verdict = unexplainedObservation() { return verdict }
        // Segments: runs of required operations, cut where none is in flight; optional ones join the segment in
        // which they are invoked.
        var segments: [[Int]] = []
        var end: UInt64 = 0
        for index in steps.indices where steps[index].required {
            if segments.isEmpty || steps[index].invoked > end {
                segments.append([])
                end = 0
            }
            segments[segments.count - 1].append(index)
            end = max(end, steps[index].deadline)
        }
        guard !segments.isEmpty else { return .linearizable }
        var segmentOf = Array(repeating: 0, count: steps.count)
        var current = 0
        for index in steps.indices {
            while current + 1 < segments.count && steps[segments[current + 1][0]].invoked <= steps[index].invoked {
                current += 1
            }
            segmentOf[index] = current
            if !steps[index].required { segments[current].append(index) }
        }
        var placedBefore = [0]
        for segment in segments { placedBefore.append(placedBefore.last! + segment.count { steps[$0].required }) }

        // A depth-first search over segments: each segment's search yields its end configurations one at a time.
        var searches: [SegmentSearch] = []
        var spent = 0
        var level = 0
        // Starts a segment's search from a configuration; a search made for other pending operations is made anew.
        func start(_ level: Int, from configuration: Configuration) {
            if searches.count == level {
                searches.append(
                    SegmentSearch(steps: steps, carried: configuration.pending, own: segments[level].sorted()))
            } else if !Set(configuration.pending).isSubset(of: searches[level].carried) {
                let carried = Set(searches[level].carried).union(configuration.pending).sorted()
                searches[level] = SegmentSearch(steps: steps, carried: carried, own: segments[level].sorted())
            }
            searches[level].start(from: configuration)
        }
        // The furthest any search got: operations placed, the one it stopped before, the values it stopped at.
        func furthest() -> (placed: Int, blocking: Int?, states: [Int]) {
            let (index, search) = searches.enumerated().max {
                (placedBefore[$0.offset] + $0.element.deepest.depth, -$0.offset)
                    < (placedBefore[$1.offset] + $1.element.deepest.depth, -$1.offset)
            }!
            let deepest = search.deepest
            guard deepest.depth >= 0 else { return (placedBefore[index], nil, []) }
            return (placedBefore[index] + deepest.depth, search.global[deepest.blocking], deepest.states.sorted())
        }
        start(0, from: Configuration(state: initialState, pending: []))
        while true {
            switch searches[level].nextEnd(spent: &spent, budget: stepBudget) {
            case .end(let configuration):
                if level == segments.count - 1 { return .linearizable }
                level += 1
                start(level, from: forgetHopeless(configuration, through: level - 1, segmentOf: segmentOf))
            case .exhausted where level > 0:
                level -= 1
            case .exhausted:
                let (placed, blocking, states) = furthest()
                return .notLinearizable(placed: placed, blocking: blocking ?? segments[0][0], states: states)
            case .outOfSteps:
                let (placed, blocking, _) = furthest()
                return .undecided(
                    placed: placed, blocking: blocking, steps: spent, from: steps[segments[level][0]].invoked)
            }
        }
    }

    /// Finds, without a search, a required read of (or compare against) a value that no order can explain: nothing
    /// taking part writes it; its only writer was invoked after the observer returned; or its only writer was
    /// followed in real time by another required write that returned before the observer was invoked (values are
    /// written once, so the value cannot come back).
    private func unexplainedObservation() -> Verdict? {
        var writers: [Int: [Int]] = [:]
        for (index, step) in steps.enumerated() {
            switch step.step {
            case .write(let value) where value != 0, .compareAndSet(_, let value) where value != 0:
                writers[value, default: []].append(index)
            default: break
            }
        }
        // The required writes by invocation, and from each on, the one with the earliest deadline.
        let requiredWrites = steps.indices.filter { steps[$0].required && !steps[$0].step.isRead }
        var earliest = requiredWrites
        for index in requiredWrites.indices.reversed().dropFirst()
        where steps[earliest[index + 1]].deadline < steps[earliest[index]].deadline {
            earliest[index] = earliest[index + 1]
        }
        for (index, step) in steps.enumerated() where step.required {
            let value: Int
            switch step.step {
            case .read(let read): value = read
            case .compareAndSet(let expected, _): value = expected
            case .write: continue
            }
            guard value != 0 && value != initialState else { continue }
            guard let found = writers[value] else { return .unexplained(observer: index, writer: nil, overwriter: nil) }
            guard found.count == 1, let writer = found.first else { continue }
            if steps[writer].invoked > step.deadline {
                return .unexplained(observer: index, writer: writer, overwriter: nil)
            }
            guard steps[writer].required else { continue }
            let after = requiredWrites.partitionPoint { steps[$0].invoked <= steps[writer].deadline }
            if after < requiredWrites.count && steps[earliest[after]].deadline < step.invoked {
                return .unexplained(observer: index, writer: writer, overwriter: earliest[after])
            }
        }
        return nil
    }

    /// Drops from a configuration the pending compare-and-sets that can never hold their compare again: the only
    /// writer of the value they expect has taken effect, and the register has moved on from it.
    private func forgetHopeless(_ configuration: Configuration, through segment: Int, segmentOf: [Int])
        -> Configuration
    {
        let pending = Set(configuration.pending)
        var result = configuration
        result.pending.removeAll { index in
            guard case .compareAndSet(let expected, _) = steps[index].step, expected != configuration.state,
                let writer = writer[expected]
            else { return false }
            return segmentOf[writer] <= segment && !pending.contains(writer)
        }
        return result
    }
}
