/// The search within one segment: optional operations invoked in earlier segments and still pending (the carried
/// ones), then the segment's own operations. The explored set is shared by every configuration the segment starts
/// from.
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
    /// have been tried, the register's value there, the candidate that took effect to reach the next node, and the
    /// operation whose return closes the candidates (nil after a read taken at once, or at an end).
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
    /// matches the register, else the others by rank, hint and position.
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
            return (a.rank, a.hint, $0) < (b.rank, b.hint, $1)
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
