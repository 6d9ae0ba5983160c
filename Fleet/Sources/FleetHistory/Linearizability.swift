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
// - The other candidates are tried in the order etcd's history suggests (see `SearchStep.rank`), so a linearizable
//   history is usually confirmed without backtracking. The order only changes how soon an answer is found.
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
            anomalies.append(
                Anomaly(
                    kind: .notLinearizable, key: key,
                    explanation: "\(quoted(key)): \(placed) of the \(register.requiredCount) operations that must take "
                        + "effect can be put in order, but then no order lets \(operation.described(since: origin)) "
                        + "take effect in time; the key could then hold only \(values)",
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
}

/// One key's operations prepared for the search.
struct RegisterHistory {
    enum Verdict: Equatable {
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

/// The search within one segment: optional operations invoked in earlier segments and still pending (the carried
/// ones), then the segment's own operations. The explored set is shared by every configuration the segment starts from.
struct SegmentSearch {
    /// A node of the search: which operations have taken effect (a bit each) and the register's value.
    private struct Node: Hashable {
        var done: [UInt64]
        var state: Int
    }

    private struct Entry {
        var operation: Int
        var isCall: Bool
    }

    /// A node on the current path: its candidates (list positions of calls) in the order to try them, how many
    /// have been tried, the register's value there, and the candidate that took effect to reach the next node.
    private struct Frame {
        var candidates: [Int]
        var tried = 0
        var state: Int
        var taken: Int?
        var blocking: Int?
    }

    /// Local operation index to index in `RegisterHistory.steps`.
    let global: [Int]
    /// The carried operations (indices in `RegisterHistory.steps`), ascending.
    let carried: [Int]
    private let steps: [SearchStep]
    private let carriedCount: Int
    private let requiredCount: Int
    private let twin: [Int?]
    /// List positions: 0 is the head, entry i is at i + 1, the tail is at `entries.count + 1`.
    private let entries: [Entry]
    private let callAt: [Int]
    private let returnAt: [Int?]
    private var next: [Int] = []
    private var previous: [Int] = []
    private var explored: Set<Node> = []
    private var done: [UInt64] = []
    private var state = 0
    private var remaining = 0
    private var path: [Frame] = []
    /// The furthest the search got: how many required operations had taken effect, the operation whose return ended
    /// it there, and the register values it was stuck at.
    private(set) var deepest: (depth: Int, blocking: Int, states: Set<Int>) = (-1, 0, [])

    init(steps all: [SearchStep], carried: [Int], own: [Int]) {
        self.carried = carried
        global = carried + own
        steps = global.map { all[$0] }
        carriedCount = carried.count
        requiredCount = steps.count(where: \.required)
        let local = Dictionary(uniqueKeysWithValues: global.enumerated().map { ($0.element, $0.offset) })
        twin = steps.map { $0.twin.flatMap { local[$0] } }
        var events: [(time: UInt64, isReturn: Bool, operation: Int)] = []
        for index in carriedCount..<steps.count {
            events.append((steps[index].invoked, false, index))
            if steps[index].required { events.append((steps[index].deadline, true, index)) }
        }
        // At equal times calls come first: the two operations are taken to overlap.
        events.sort { ($0.time, $0.isReturn ? 1 : 0, $0.operation) < ($1.time, $1.isReturn ? 1 : 0, $1.operation) }
        entries =
            (0..<carriedCount).map { Entry(operation: $0, isCall: true) }
            + events.map { Entry(operation: $0.operation, isCall: !$0.isReturn) }
        var callAt = Array(repeating: 0, count: steps.count)
        var returnAt: [Int?] = Array(repeating: nil, count: steps.count)
        for (position, entry) in entries.enumerated() {
            if entry.isCall { callAt[entry.operation] = position + 1 } else { returnAt[entry.operation] = position + 1 }
        }
        self.callAt = callAt
        self.returnAt = returnAt
    }

    /// Starts the search afresh from `configuration`; carried operations not pending in it have taken effect.
    mutating func start(from configuration: RegisterHistory.Configuration) {
        let tail = entries.count + 1
        next = Array(1...tail) + [tail]
        previous = [0] + Array(0..<tail)
        done = Array(repeating: 0, count: (steps.count + 63) / 64)
        let pending = Set(configuration.pending)
        for index in 0..<carriedCount where !pending.contains(global[index]) {
            done[index / 64] |= 1 << (index % 64)
            lift(callAt[index])
        }
        state = configuration.state
        remaining = requiredCount
        path = []
        if explored.insert(Node(done: done, state: state)).inserted { path.append(frame()) }
    }

    enum Next {
        /// A configuration in which the segment can end.
        case end(RegisterHistory.Configuration)
        /// No more from the configuration the search was started from.
        case exhausted
        /// The budget is spent.
        case outOfSteps
    }

    /// Goes on searching, from the configuration it was started from, for the next configuration in which the
    /// segment can end; each step counts in `spent`.
    mutating func nextEnd(spent: inout Int, budget: Int) -> Next {
        while let top = path.indices.last {
            spent += 1
            if spent > budget { return .outOfSteps }
            if let taken = path[top].taken {
                // Back from the node that `taken` led to: undo it.
                let operation = entries[taken - 1].operation
                done[operation / 64] &= ~(1 << (operation % 64))
                state = path[top].state
                unlift(taken)
                if steps[operation].required { remaining += 1 }
                path[top].taken = nil
            }
            guard path[top].tried < path[top].candidates.count else {
                let depth = requiredCount - remaining
                if let blocking = path[top].blocking {
                    if depth > deepest.depth {
                        deepest = (depth, blocking, [state])
                    } else if depth == deepest.depth && blocking == deepest.blocking && deepest.states.count < 4 {
                        deepest.states.insert(state)
                    }
                }
                path.removeLast()
                continue
            }
            let position = path[top].candidates[path[top].tried]
            path[top].tried += 1
            let operation = entries[position - 1].operation
            if let twin = twin[operation], done[twin / 64] & (1 << (twin % 64)) == 0 { continue }
            guard let after = steps[operation].step.apply(to: state) else { continue }
            done[operation / 64] |= 1 << (operation % 64)
            guard explored.insert(Node(done: done, state: after)).inserted else {
                done[operation / 64] &= ~(1 << (operation % 64))
                continue
            }
            path[top].taken = position
            state = after
            lift(position)
            if steps[operation].required { remaining -= 1 }
            path.append(frame())
            if remaining == 0 {
                let left = steps.indices.filter { !steps[$0].required && done[$0 / 64] & (1 << ($0 % 64)) == 0 }
                return .end(RegisterHistory.Configuration(state: state, pending: left.map { global[$0] }))
            }
        }
        return .exhausted
    }

    /// The frame of the node just reached: the calls before the first remaining return; just one read if one
    /// matches the register, else the others by rank, deadline and position.
    private func frame() -> Frame {
        var candidates: [Int] = []
        var position = next[0]
        while remaining > 0 && position <= entries.count && entries[position - 1].isCall {
            let step = steps[entries[position - 1].operation]
            if step.step.isRead {
                if step.step.apply(to: state) != nil { return Frame(candidates: [position], state: state) }
            } else {
                candidates.append(position)
            }
            position = next[position]
        }
        candidates.sort {
            let (a, b) = (steps[entries[$0 - 1].operation], steps[entries[$1 - 1].operation])
            return (a.rank, a.deadline, $0) < (b.rank, b.deadline, $1)
        }
        let blocking = remaining > 0 && position <= entries.count ? entries[position - 1].operation : nil
        return Frame(candidates: candidates, state: state, blocking: blocking)
    }

    /// Takes a call, and its return if it has one, out of the list.
    private mutating func lift(_ position: Int) {
        next[previous[position]] = next[position]
        previous[next[position]] = previous[position]
        if let at = returnAt[entries[position - 1].operation] {
            next[previous[at]] = next[at]
            previous[next[at]] = previous[at]
        }
    }

    /// Puts back what the last `lift` took out.
    private mutating func unlift(_ position: Int) {
        if let at = returnAt[entries[position - 1].operation] {
            next[previous[at]] = at
            previous[next[at]] = at
        }
        next[previous[position]] = position
        previous[next[position]] = position
    }
}
