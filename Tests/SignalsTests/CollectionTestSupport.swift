import Foundation
import Signals
import Synchronization

/// A small, fast, seedable random generator (SplitMix64), so that every random test case can be
/// replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: Range<Int>) -> Int {
        Int.random(in: range, using: &self)
    }

    mutating func chance(_ percent: Int) -> Bool {
        int(0..<100) < percent
    }

    mutating func array(maxCount: Int, values: Int) -> [Int] {
        (0..<int(0..<(maxCount + 1))).map { _ in int(0..<values) }
    }
}

/// Seeds for the property-based tests.
///
/// Each test draws one seed per case from a base seed. The base seed is random unless the
/// environment sets `SIGNALS_SEED`; every failure message names the seed of its case, and running
/// with `SIGNALS_SEED=<that seed> SIGNALS_CASES=1` replays exactly that case.
/// `SIGNALS_CASES` also changes the number of cases per test.
enum TestSeeds {
    static func seeds(defaultCases: Int) -> [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        let cases = environment["SIGNALS_CASES"].flatMap { Int($0) } ?? defaultCases
        if let text = environment["SIGNALS_SEED"], let seed = UInt64(text) {
            // The given seed is the first case, so a failing case replays on its own.
            var generator = SplitMix64(seed: seed)
            return [seed] + (1..<max(cases, 1)).map { _ in generator.next() }
        }
        var generator = SplitMix64(seed: UInt64.random(in: .min ... .max))
        return (0..<cases).map { _ in generator.next() }
    }
}

/// Records the events of a signal of array events, thread-safely.
final class ArrayEventRecorder<Item: Sendable>: Sendable {
    private let state = Mutex<(events: [ObservableArrayEvent<Item>], completed: Bool)>(([], false))

    func record(_ event: Event<ObservableArrayEvent<Item>>) {
        state.withLock { state in
            switch event {
            case .next(let element): state.events.append(element)
            case .completed: state.completed = true
            }
        }
    }

    var events: [ObservableArrayEvent<Item>] { state.withLock { $0.events } }
    var completed: Bool { state.withLock { $0.completed } }
    var last: [Item]? { state.withLock { $0.events.last?.array } }
}

/// Checks that each event's change set, applied to the previous event's array (empty before the
/// first), gives the event's array, and that its indices are listed in the documented order.
/// Returns a description of the first mismatch, or nil.
func chainProblem<Item: Equatable>(_ events: [ObservableArrayEvent<Item>]) -> String? {
    var current: [Item] = []
    for (number, event) in events.enumerated() {
        let change = event.changeSet
        guard isStrictlyAscending(change.deletes), isStrictlyAscending(change.inserts.map(\.index)),
            isStrictlyAscending(change.updates.map(\.index)), isStrictlyAscending(change.moves.map(\.to))
        else {
            return "event \(number): indices out of order in \(change)"
        }
        if change.isEmpty { return "event \(number): empty change set" }
        do {
            let applied = try change.applied(to: current)
            guard applied == event.array else {
                return "event \(number): \(change) applied to \(current) gives \(applied), not \(event.array)"
            }
        } catch {
            return "event \(number): \(change) does not fit \(current): \(error)"
        }
        current = event.array
    }
    return nil
}

func isStrictlyAscending<T: Comparable>(_ values: [T]) -> Bool {
    zip(values, values.dropFirst()).allSatisfy { $0 < $1 }
}
