import Testing

@testable import FleetHistory

@Suite("random histories")
struct RandomHistoryTests {
    @Test(
        "a simulated linearizable history passes every check; with two acknowledged writes' values swapped it does not",
        arguments: [
            RandomHistory(processes: 5, keys: 3, operations: 300),
            RandomHistory(processes: 8, keys: 1, operations: 400, unknownRate: 0.1),
            RandomHistory(processes: 3, keys: 2, operations: 300, unknownRate: 0.3),
        ])
    func simulated(shape: RandomHistory) throws {
        for seed in UInt64(1)...20 {
            var history = shape.make(seed: seed)
            #expect(history.anomalies() == [], "seed \(seed)")
            // Without etcd's history, nothing guides the search and no unknown write is known not to have applied.
            var withoutEtcd = history
            withoutEtcd.etcdChanges = []
            #expect(HistoryCheck.linearizable.anomalies(in: withoutEtcd) == [], "seed \(seed)")

            // A read of W1's value completed before W2 (same key) was invoked: once W1 and W2 trade values, the read
            // returns a value not yet written.
            let operations = history.operations
            let writes = operations.filter {
                if case .set = $0.kind { return $0.outcome == .ok }
                return false
            }
            var swap: (Int, Int, String)?
            search: for read in operations where read.outcome == .ok && read.kind == .read && read.readValue != nil {
                guard let first = writes.first(where: { $0.kind.writtenValue == read.readValue }) else { continue }
                for second in writes where second.key == read.key && second.invoked > read.completed! {
                    swap = (first.id, second.id, read.key)
                    break search
                }
            }
            let (first, second, key) = try #require(swap, "seed \(seed)")
            (history.operations[first].kind, history.operations[second].kind) =
                (history.operations[second].kind, history.operations[first].kind)
            let anomalies = HistoryCheck.linearizable.anomalies(in: history)
            #expect(anomalies.map(\.kind) == [.notLinearizable], "seed \(seed)")
            #expect(anomalies.map(\.key) == [key], "seed \(seed)")
            // The search finds it too, without the checks made before it.
            let searched = linearizabilityAnomalies(in: history, options: CheckOptions(), shortcuts: false)
            #expect(searched.map(\.kind) == [.notLinearizable], "seed \(seed)")
            #expect(searched.map(\.key) == [key], "seed \(seed)")
        }
    }

    @Test("5,000 operations over 10 keys are checked in seconds")
    func large() {
        let history = RandomHistory(processes: 10, keys: 10, operations: 5_000).make(seed: 42)
        let clock = ContinuousClock()
        var report: HistoryReport?
        let elapsed = clock.measure { report = HistoryReport(history: history) }
        #expect(report?.isClean == true)
        #expect(elapsed < .seconds(30))
        print("checked \(history.operations.count) operations over 10 keys in \(elapsed)")
    }
}

extension RandomHistory: CustomTestStringConvertible {
    var testDescription: String {
        "\(processes) processes, \(keys) keys, \(operations) operations, \(unknownRate) unknown"
    }
}
