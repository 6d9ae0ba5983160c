import Signals
import Testing

/// One random edit, applied alike to a plain array (the model), an observable array and a batch.
enum ArrayEdit: CustomStringConvertible {
    case append(Int)
    case appendContents([Int])
    case insert(Int, at: Int)
    case insertContents([Int], at: Int)
    case remove(at: Int)
    case removeLast
    case removeAll
    case move(from: Int, to: Int)
    case replace(at: Int, with: Int)

    static func random(count: Int, using generator: inout SplitMix64) -> ArrayEdit {
        let value = generator.int(0..<10)
        guard count > 0 else {
            return generator.chance(50) ? .append(value) : .appendContents(generator.array(maxCount: 4, values: 10))
        }
        switch generator.int(0..<20) {
        case 0..<3: return .append(value)
        case 3: return .appendContents(generator.array(maxCount: 4, values: 10))
        case 4..<7: return .insert(value, at: generator.int(0..<(count + 1)))
        case 7: return .insertContents(generator.array(maxCount: 4, values: 10), at: generator.int(0..<(count + 1)))
        case 8..<11: return .remove(at: generator.int(0..<count))
        case 11: return .removeLast
        case 12: return generator.chance(30) ? .removeAll : .remove(at: generator.int(0..<count))
        case 13..<16: return .move(from: generator.int(0..<count), to: generator.int(0..<count))
        default: return .replace(at: generator.int(0..<count), with: value)
        }
    }

    func apply(to array: inout [Int]) {
        switch self {
        case .append(let value): array.append(value)
        case .appendContents(let values): array.append(contentsOf: values)
        case .insert(let value, let index): array.insert(value, at: index)
        case .insertContents(let values, let index): array.insert(contentsOf: values, at: index)
        case .remove(let index): array.remove(at: index)
        case .removeLast: array.removeLast()
        case .removeAll: array.removeAll()
        case .move(let from, let to): array.insert(array.remove(at: from), at: to)
        case .replace(let index, let value): array[index] = value
        }
    }

    func apply(to array: MutableObservableArray<Int>) {
        switch self {
        case .append(let value): array.append(value)
        case .appendContents(let values): array.append(contentsOf: values)
        case .insert(let value, let index): array.insert(value, at: index)
        case .insertContents(let values, let index): array.insert(contentsOf: values, at: index)
        case .remove(let index): array.remove(at: index)
        case .removeLast: array.removeLast()
        case .removeAll: array.removeAll()
        case .move(let from, let to): array.move(from: from, to: to)
        case .replace(let index, let value): array[index] = value
        }
    }

    func apply(to batch: inout ObservableArrayBatch<Int>) {
        switch self {
        case .append(let value): batch.append(value)
        case .appendContents(let values): batch.append(contentsOf: values)
        case .insert(let value, let index): batch.insert(value, at: index)
        case .insertContents(let values, let index): batch.insert(contentsOf: values, at: index)
        case .remove(let index): batch.remove(at: index)
        case .removeLast: batch.remove(at: batch.count - 1)
        case .removeAll: batch.removeAll()
        case .move(let from, let to): batch.move(from: from, to: to)
        case .replace(let index, let value): batch[index] = value
        }
    }

    var description: String {
        switch self {
        case .append(let value): "append(\(value))"
        case .appendContents(let values): "append(contentsOf: \(values))"
        case .insert(let value, let index): "insert(\(value), at: \(index))"
        case .insertContents(let values, let index): "insert(contentsOf: \(values), at: \(index))"
        case .remove(let index): "remove(at: \(index))"
        case .removeLast: "removeLast()"
        case .removeAll: "removeAll()"
        case .move(let from, let to): "move(from: \(from), to: \(to))"
        case .replace(let index, let value): "[\(index)] = \(value)"
        }
    }
}

/// A step of a random run: one edit, a batch of edits, or a whole new array.
enum ArrayStep: CustomStringConvertible {
    case edit(ArrayEdit)
    case batch([ArrayEdit])
    case diff([Int])
    case reset([Int])

    static func random(model: [Int], using generator: inout SplitMix64) -> ArrayStep {
        switch generator.int(0..<20) {
        case 0..<3:
            var scratch = model
            var edits: [ArrayEdit] = []
            for _ in 0..<generator.int(0..<9) {
                let edit = ArrayEdit.random(count: scratch.count, using: &generator)
                edit.apply(to: &scratch)
                edits.append(edit)
            }
            return .batch(edits)
        case 3:
            // A new array that shares most of the old one, shuffled a little.
            var new = model
            for _ in 0..<generator.int(0..<4) {
                ArrayEdit.random(count: new.count, using: &generator).apply(to: &new)
            }
            return .diff(new)
        case 4:
            return .reset(generator.array(maxCount: 8, values: 10))
        default:
            return .edit(ArrayEdit.random(count: model.count, using: &generator))
        }
    }

    func apply(to model: inout [Int]) {
        switch self {
        case .edit(let edit): edit.apply(to: &model)
        case .batch(let edits): for edit in edits { edit.apply(to: &model) }
        case .diff(let new), .reset(let new): model = new
        }
    }

    func apply(to array: MutableObservableArray<Int>) {
        switch self {
        case .edit(let edit):
            edit.apply(to: array)
        case .batch(let edits):
            array.batchUpdate { batch in
                for edit in edits { edit.apply(to: &batch) }
            }
        case .diff(let new):
            array.replace(with: new, performDiff: true)
        case .reset(let new):
            array.replace(with: new, performDiff: false)
        }
    }

    var description: String {
        switch self {
        case .edit(let edit): "\(edit)"
        case .batch(let edits): "batch \(edits)"
        case .diff(let new): "diff to \(new)"
        case .reset(let new): "reset to \(new)"
        }
    }
}

@Suite("Observable arrays, property-based")
struct ObservableArrayPropertyTests {
    /// Random runs of edits, batches and replacements. For every event of the array itself and of
    /// a mapped, a filtered, a mapped-then-filtered and a bound array, the change set applied to
    /// the previous array gives the new one, and after every step each holds what it should.
    @Test func randomOperationSequences() {
        for seed in TestSeeds.seeds(defaultCases: 1500) {
            var generator = SplitMix64(seed: seed)
            var model = generator.array(maxCount: 8, values: 10)
            let array = MutableObservableArray(model)
            let plain = ArrayEventRecorder<Int>()
            let mapped = ArrayEventRecorder<String>()
            let filtered = ArrayEventRecorder<Int>()
            let mappedFiltered = ArrayEventRecorder<Int>()
            let boundEvents = ArrayEventRecorder<Int>()
            let target = MutableObservableArray([7, 7])
            let bag = DisposeBag()
            array.observe(with: plain.record).dispose(in: bag)
            array.mapCollection { "v\($0)" }.observe(with: mapped.record).dispose(in: bag)
            array.filterCollection { $0.isMultiple(of: 2) }.observe(with: filtered.record).dispose(in: bag)
            array.mapCollection { $0 * 3 }.filterCollection { $0 > 9 }.observe(with: mappedFiltered.record)
                .dispose(in: bag)
            target.observe(with: boundEvents.record).dispose(in: bag)
            array.bindCollection(to: target).dispose(in: bag)

            var log: [String] = []
            var failure: String?
            for _ in 0..<generator.int(1..<25) {
                let step = ArrayStep.random(model: model, using: &generator)
                log.append(step.description)
                step.apply(to: &model)
                step.apply(to: array)
                if array.array != model {
                    failure = "array \(array.array) != model \(model)"
                } else if plain.last != model {
                    failure = "observer saw \(plain.last ?? []) != \(model)"
                } else if mapped.last != model.map({ "v\($0)" }) {
                    failure = "mapped \(mapped.last ?? [])"
                } else if filtered.last != model.filter({ $0.isMultiple(of: 2) }) {
                    failure = "filtered \(filtered.last ?? [])"
                } else if mappedFiltered.last != model.map({ $0 * 3 }).filter({ $0 > 9 }) {
                    failure = "mapped then filtered \(mappedFiltered.last ?? [])"
                } else if target.array != model || boundEvents.last != model {
                    failure = "bound target \(target.array)"
                }
                if failure != nil { break }
            }
            failure =
                failure ?? chainProblem(plain.events).map { "plain: \($0)" }
                ?? chainProblem(mapped.events).map { "mapped: \($0)" }
                ?? chainProblem(filtered.events).map { "filtered: \($0)" }
                ?? chainProblem(mappedFiltered.events).map { "mapped then filtered: \($0)" }
                ?? chainProblem(boundEvents.events).map { "bound target: \($0)" }
            #expect(
                failure == nil, "seed \(seed) (SIGNALS_SEED=\(seed) SIGNALS_CASES=1): \(failure ?? "") after \(log)")
            if failure != nil { return }
        }
    }

    /// Random pairs of arrays: the diffed change set turns the old array into the new one, for
    /// Hashable elements (with moves) and for Equatable-only elements.
    @Test func randomArrayPairsDiff() {
        for seed in TestSeeds.seeds(defaultCases: 2000) {
            var generator = SplitMix64(seed: seed)
            let old = generator.array(maxCount: 30, values: 8)
            var new = generator.chance(50) ? generator.array(maxCount: 30, values: 8) : old.shuffled(using: &generator)
            if generator.chance(50) { new.append(contentsOf: generator.array(maxCount: 3, values: 8)) }

            let hashable = MutableObservableArray(old)
            let hashableEvents = ArrayEventRecorder<Int>()
            let first = hashable.observe(with: hashableEvents.record)
            hashable.replace(with: new, performDiff: true)
            first.dispose()

            let equatable = MutableObservableArray(old.map(EquatableOnly.init))
            let equatableEvents = ArrayEventRecorder<EquatableOnly>()
            let second = equatable.observe(with: equatableEvents.record)
            equatable.replace(with: new.map(EquatableOnly.init), performDiff: true)
            second.dispose()

            let problem =
                chainProblem(hashableEvents.events).map { "hashable: \($0)" }
                ?? chainProblem(equatableEvents.events).map { "equatable: \($0)" }
            let expectedEvents = old == new ? 1 : 2
            let diffIsIncremental = hashableEvents.events.dropFirst().allSatisfy { !$0.changeSet.isReset }
            #expect(
                problem == nil && hashableEvents.events.count == expectedEvents
                    && equatableEvents.events.count == expectedEvents && diffIsIncremental,
                "seed \(seed) (SIGNALS_SEED=\(seed) SIGNALS_CASES=1): \(old) -> \(new): \(problem ?? "wrong events")"
            )
            if problem != nil { return }
        }
    }

    /// Random change sets made by batches, replayed on plain arrays with `apply(to:)`, and filtered
    /// with random predicates.
    @Test func randomBatchesReplayAndFilter() {
        for seed in TestSeeds.seeds(defaultCases: 1000) {
            var generator = SplitMix64(seed: seed)
            let old = generator.array(maxCount: 12, values: 10)
            let modulus = generator.int(2..<4)
            let array = MutableObservableArray(old)
            let filtered = ArrayEventRecorder<Int>()
            let plain = ArrayEventRecorder<Int>()
            let bag = DisposeBag()
            array.observe(with: plain.record).dispose(in: bag)
            array.filterCollection { $0 % modulus == 0 }.observe(with: filtered.record).dispose(in: bag)
            var edits: [ArrayEdit] = []
            array.batchUpdate { batch in
                for _ in 0..<generator.int(1..<12) {
                    let edit = ArrayEdit.random(count: batch.count, using: &generator)
                    edit.apply(to: &batch)
                    edits.append(edit)
                }
            }
            var mirror = old
            var replayProblem: String?
            if let change = plain.events.dropFirst().first?.changeSet {
                do {
                    try change.apply(to: &mirror)
                    if mirror != array.array { replayProblem = "replay gives \(mirror)" }
                } catch {
                    replayProblem = "replay throws \(error)"
                }
            }
            let problem =
                replayProblem ?? chainProblem(filtered.events)
                ?? (filtered.last == array.array.filter { $0 % modulus == 0 } ? nil : "filtered \(filtered.last ?? [])")
            #expect(
                problem == nil,
                "seed \(seed) (SIGNALS_SEED=\(seed) SIGNALS_CASES=1): \(old), \(edits): \(problem ?? "")")
            if problem != nil { return }
        }
    }
}

/// An element that is Equatable but not Hashable, for the diff without move inference.
struct EquatableOnly: Equatable, Sendable, CustomStringConvertible {
    var value: Int
    init(_ value: Int) { self.value = value }
    var description: String { "\(value)" }
}
