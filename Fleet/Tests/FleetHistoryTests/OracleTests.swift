import Testing

@testable import FleetHistory

/// Decides linearizability of one key's small history by trying every order: acknowledged operations must all take
/// effect, unknown ones may or may not, failed ones and unknown reads do not take part. An operation may take effect
/// next only if no acknowledged operation still waiting returned before it was invoked.
private func bruteForceLinearizable(_ operations: [Operation]) -> Bool {
    let candidates = operations.filter { $0.outcome == .ok || ($0.outcome == .unknown && $0.kind.isWrite) }
    func search(_ state: String?, _ placed: Set<Int>) -> Bool {
        let waiting = candidates.filter { $0.outcome == .ok && !placed.contains($0.id) }
        if waiting.isEmpty { return true }
        let earliestReturn = waiting.map { $0.completed! }.min()!
        for operation in candidates where !placed.contains(operation.id) && operation.invoked <= earliestReturn {
            var after = state
            switch operation.kind {
            case .set(let value): after = value
            case .unset: after = nil
            case .compareAndSet(let expected, let value):
                guard state == expected else { continue }
                after = value
            case .read:
                guard state == operation.readValue else { continue }
            }
            if search(after, placed.union([operation.id])) { return true }
        }
        return false
    }
    return search(nil, [])
}

@Suite("the checker against a brute-force search")
struct OracleTests {
    @Test("small random histories, linearizable or not, get the brute-force verdict, with and without shortcuts")
    func smallHistories() {
        var random = SeededGenerator(seed: 2024)
        var (linearizable, notLinearizable) = (0, 0)
        for round in 0..<3_000 {
            var history = History()
            var written: [String] = []
            for id in 0..<Int.random(in: 2...7, using: &random) {
                let invoked = UInt64.random(in: 0...20, using: &random)
                let completed = invoked + UInt64.random(in: 0...10, using: &random)
                let outcome = [Outcome.ok, .ok, .ok, .ok, .fail, .unknown, .unknown].randomElement(using: &random)!
                let kind: OperationKind
                var readValue: String?
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    kind = .set("v\(id)")
                    written.append("v\(id)")
                case 1:
                    kind = .unset
                case 2:
                    let expected = Bool.random(using: &random) ? written.randomElement(using: &random) : nil
                    kind = .compareAndSet(
                        expected: expected, value: Int.random(in: 0..<4, using: &random) == 0 ? nil : "v\(id)")
                    if kind.writtenValue != nil { written.append("v\(id)") }
                default:
                    kind = .read
                    readValue = Int.random(in: 0..<4, using: &random) == 0 ? nil : written.randomElement(using: &random)
                }
                history.operations.append(
                    Operation(
                        id: id, process: id, key: "k", kind: kind, invoked: invoked,
                        completed: outcome == .unknown ? nil : completed, outcome: outcome,
                        readValue: outcome == .ok ? readValue : nil))
            }
            let expected = bruteForceLinearizable(history.operations)
            if expected { linearizable += 1 } else { notLinearizable += 1 }
            for shortcuts in [true, false] {
                let found = linearizabilityAnomalies(in: history, options: CheckOptions(), shortcuts: shortcuts)
                #expect(
                    found.map(\.kind) == (expected ? [] : [.notLinearizable]),
                    "round \(round), shortcuts \(shortcuts): \(history.operations)")
            }
        }
        // Both verdicts are well represented.
        #expect(linearizable > 500 && notLinearizable > 500)
    }
}
