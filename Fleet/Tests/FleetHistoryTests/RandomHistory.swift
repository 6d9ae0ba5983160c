import FleetHistory

/// A small deterministic generator (SplitMix64), so that a seed names one history.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Makes linearizable histories by simulating registers: each process makes calls one after another, with random
/// durations and pauses; each call takes effect at a random moment within its interval, and the results, etcd's
/// history and the watchers' events follow from the order of those moments. About `unknownRate` of the calls end
/// unknown: half of them take effect at some later moment, the others never.
struct RandomHistory {
    var processes = 5
    var keys = 3
    var operations = 300
    var unknownRate = 0.05
    var observers = 2

    func make(seed: UInt64) -> History {
        var random = SeededGenerator(seed: seed)
        // The calls, in each process's order; what they do is settled when they take effect.
        struct Call {
            var process: Int
            var key: String
            var kind: String
            var invoked: UInt64
            var completed: UInt64
            var unknown: Bool
            var effect: UInt64?
        }
        var calls: [Call] = []
        var clocks = (0..<processes).map { _ in UInt64.random(in: 0..<1_000_000, using: &random) }
        for index in 0..<operations {
            let process = index % processes
            let invoked = clocks[process]
            let completed = invoked + UInt64.random(in: 1_000...1_000_000, using: &random)
            let kind = ["set", "set", "set", "unset", "cas", "cas", "read", "read", "read"].randomElement(
                using: &random)!
            let unknown = Double.random(in: 0..<1, using: &random) < unknownRate
            var effect: UInt64? = UInt64.random(in: invoked...completed, using: &random)
            if unknown {
                effect = Bool.random(using: &random) ? invoked + UInt64.random(in: 0...5_000_000, using: &random) : nil
            }
            calls.append(
                Call(
                    process: process, key: "key\(Int.random(in: 0..<keys, using: &random))", kind: kind,
                    invoked: invoked, completed: completed, unknown: unknown, effect: effect))
            clocks[process] = completed + UInt64.random(in: 0...500_000, using: &random)
        }

        var history = History()
        var state: [String: String] = [:]
        var written: [String: [String]] = [:]
        var revision: Int64 = 0
        var fresh = 0
        func freshValue() -> String {
            fresh += 1
            return "v\(fresh)"
        }
        let order = calls.indices.sorted { (calls[$0].effect ?? .max, $0) < (calls[$1].effect ?? .max, $1) }
        var operations: [Operation?] = Array(repeating: nil, count: calls.count)
        for index in order {
            let call = calls[index]
            let current = state[call.key]
            let applies = call.effect != nil
            var kind = OperationKind.read
            var outcome: Outcome = call.unknown ? .unknown : .ok
            var changes = false
            var readValue: String?
            switch call.kind {
            case "set":
                kind = .set(freshValue())
                changes = true
            case "unset":
                kind = .unset
                changes = current != nil
                if current == nil && !call.unknown && Bool.random(using: &random) { outcome = .fail }
            case "cas":
                let roll = Int.random(in: 0..<4, using: &random)
                let expected = roll < 2 ? current : roll == 2 ? written[call.key]?.randomElement(using: &random) : nil
                kind = .compareAndSet(
                    expected: expected, value: Int.random(in: 0..<5, using: &random) == 0 ? nil : freshValue())
                if expected == current {
                    changes = current != nil || kind.writtenValue != nil
                } else if !call.unknown {
                    outcome = .fail
                }
            default:
                readValue = current
            }
            var committed: Int64?
            if applies && changes {
                let next = kind.writtenValue
                revision += 1
                committed = revision
                history.etcdChanges.append(EtcdChange(revision: revision, key: call.key, value: next))
                state[call.key] = next
                if let next { written[call.key, default: []].append(next) }
            }
            operations[index] = Operation(
                id: index, process: call.process, key: call.key, kind: kind, invoked: call.invoked,
                completed: call.unknown ? nil : call.completed, outcome: outcome,
                readValue: outcome == .ok ? readValue : nil, revision: outcome == .ok ? committed : nil)
        }
        history.operations = operations.map { $0! }
        for change in history.etcdChanges {
            for observer in 0..<observers where Int.random(in: 0..<5, using: &random) > 0 {
                history.watchEvents.append(
                    WatchEvent(observer: "kiosk-\(observer)", key: change.key, value: change.value))
            }
        }
        return history
    }
}
