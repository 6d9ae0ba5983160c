import Signals
import Synchronization
import Testing

typealias TestSection = ArraySection<Int, Int>

/// One random edit of a sectioned array, applied alike to plain sections (the model), an
/// observable sectioned array and a batch.
enum SectionedEdit: CustomStringConvertible {
    case insertSection(TestSection, at: Int)
    case removeSection(at: Int)
    case moveSection(from: Int, to: Int)
    case updateSection(at: Int, metadata: Int)
    case insertItem(Int, at: SectionedIndex)
    case removeItem(at: SectionedIndex)
    case moveItem(from: SectionedIndex, to: SectionedIndex)
    case replaceItem(at: SectionedIndex, with: Int)
    case removeAll

    static func random(_ sections: [TestSection], using generator: inout SplitMix64) -> SectionedEdit {
        let value = generator.int(0..<10)
        let count = sections.count
        let filled = sections.indices.filter { !sections[$0].items.isEmpty }
        let kind = generator.int(0..<20)
        if count == 0 || kind < 3 {
            let section = TestSection(metadata: value, items: generator.array(maxCount: 4, values: 10))
            return .insertSection(section, at: generator.int(0..<(count + 1)))
        }
        switch kind {
        case 3, 4: return .removeSection(at: generator.int(0..<count))
        case 5, 6: return .moveSection(from: generator.int(0..<count), to: generator.int(0..<count))
        case 7: return .updateSection(at: generator.int(0..<count), metadata: value)
        case 8: return generator.chance(20) ? .removeAll : .updateSection(at: generator.int(0..<count), metadata: value)
        case 9..<12:
            let section = generator.int(0..<count)
            let index = SectionedIndex(section: section, item: generator.int(0..<(sections[section].items.count + 1)))
            return .insertItem(value, at: index)
        default:
            guard !filled.isEmpty else { return .insertItem(value, at: SectionedIndex(section: 0, item: 0)) }
            let section = filled[generator.int(0..<filled.count)]
            let source = SectionedIndex(section: section, item: generator.int(0..<sections[section].items.count))
            switch kind {
            case 12, 13:
                return .removeItem(at: source)
            case 14..<17:
                let target = generator.int(0..<count)
                let room = sections[target].items.count + (target == section ? 0 : 1)
                return .moveItem(from: source, to: SectionedIndex(section: target, item: generator.int(0..<room)))
            default:
                return .replaceItem(at: source, with: value)
            }
        }
    }

    func apply(to sections: inout [TestSection]) {
        switch self {
        case .insertSection(let section, let index): sections.insert(section, at: index)
        case .removeSection(let index): sections.remove(at: index)
        case .moveSection(let from, let to): sections.insert(sections.remove(at: from), at: to)
        case .updateSection(let index, let metadata): sections[index].metadata = metadata
        case .insertItem(let item, let index): sections[index.section].items.insert(item, at: index.item)
        case .removeItem(let index): sections[index.section].items.remove(at: index.item)
        case .moveItem(let from, let to):
            let item = sections[from.section].items.remove(at: from.item)
            sections[to.section].items.insert(item, at: to.item)
        case .replaceItem(let index, let item): sections[index.section].items[index.item] = item
        case .removeAll: sections.removeAll()
        }
    }

    func apply(to array: MutableObservableSectionedArray<Int, Int>) {
        switch self {
        case .insertSection(let section, let index):
            if index == array.sectionCount {
                array.appendSection(section)
            } else {
                array.insertSection(section, at: index)
            }
        case .removeSection(let index): array.removeSection(at: index)
        case .moveSection(let from, let to): array.moveSection(from: from, to: to)
        case .updateSection(let index, let metadata): array.replaceSectionMetadata(at: index, with: metadata)
        case .insertItem(let item, let index):
            if index.item == array.sections[index.section].items.count {
                array.appendItem(item, toSection: index.section)
            } else {
                array.insertItem(item, at: index)
            }
        case .removeItem(let index): array.removeItem(at: index)
        case .moveItem(let from, let to): array.moveItem(from: from, to: to)
        case .replaceItem(let index, let item): array[index] = item
        case .removeAll: array.removeAll()
        }
    }

    func apply(to batch: inout SectionedArrayBatch<Int, Int>) {
        switch self {
        case .insertSection(let section, let index):
            if index == batch.sectionCount {
                batch.appendSection(section)
            } else {
                batch.insertSection(section, at: index)
            }
        case .removeSection(let index): batch.removeSection(at: index)
        case .moveSection(let from, let to): batch.moveSection(from: from, to: to)
        case .updateSection(let index, let metadata): batch.replaceSectionMetadata(at: index, with: metadata)
        case .insertItem(let item, let index):
            if index.item == batch.sections[index.section].items.count {
                batch.appendItem(item, toSection: index.section)
            } else {
                batch.insertItem(item, at: index)
            }
        case .removeItem(let index): batch.removeItem(at: index)
        case .moveItem(let from, let to): batch.moveItem(from: from, to: to)
        case .replaceItem(let index, let item): batch[index] = item
        case .removeAll: batch.removeAll()
        }
    }

    var description: String {
        switch self {
        case .insertSection(let section, let index):
            "insertSection(\(section.metadata): \(section.items), at: \(index))"
        case .removeSection(let index): "removeSection(at: \(index))"
        case .moveSection(let from, let to): "moveSection(from: \(from), to: \(to))"
        case .updateSection(let index, let metadata): "section[\(index)].metadata = \(metadata)"
        case .insertItem(let item, let index): "insertItem(\(item), at: \(index))"
        case .removeItem(let index): "removeItem(at: \(index))"
        case .moveItem(let from, let to): "moveItem(from: \(from), to: \(to))"
        case .replaceItem(let index, let item): "[\(index)] = \(item)"
        case .removeAll: "removeAll()"
        }
    }
}

/// Records the events of a sectioned array, thread-safely.
final class SectionedEventRecorder: Sendable {
    private let state = Mutex<[ObservableSectionedArrayEvent<Int, Int>]>([])

    func record(_ event: Event<ObservableSectionedArrayEvent<Int, Int>>) {
        guard case .next(let element) = event else { return }
        state.withLock { $0.append(element) }
    }

    var events: [ObservableSectionedArrayEvent<Int, Int>] { state.withLock { $0 } }
}

/// Checks every event's change set against the previous event's sections and the documented
/// ordering of its lists; returns the first mismatch, or nil.
func sectionedChainProblem(_ events: [ObservableSectionedArrayEvent<Int, Int>]) -> String? {
    var current: [TestSection] = []
    for (number, event) in events.enumerated() {
        let change = event.changeSet
        guard isStrictlyAscending(change.sectionDeletes), isStrictlyAscending(change.sectionInserts.map(\.index)),
            isStrictlyAscending(change.sectionUpdates.map(\.index)), isStrictlyAscending(change.sectionMoves.map(\.to)),
            isStrictlyAscending(change.itemDeletes), isStrictlyAscending(change.itemInserts.map(\.index)),
            isStrictlyAscending(change.itemUpdates.map(\.index)), isStrictlyAscending(change.itemMoves.map(\.to))
        else {
            return "event \(number): lists out of order in \(change)"
        }
        if change.isEmpty { return "event \(number): empty change set" }
        do {
            let applied = try change.applied(to: current)
            guard applied == event.sections else {
                return "event \(number): \(change) applied to \(current) gives \(applied), not \(event.sections)"
            }
        } catch {
            return "event \(number): \(change) does not fit \(current): \(error)"
        }
        current = event.sections
    }
    return nil
}

@Suite("Observable sectioned arrays")
struct SectionedArrayTests {
    /// Random runs of single edits and batches: every event's change set applied to the previous
    /// sections gives the new ones, and the observed sections always equal the model.
    @Test func randomOperationSequences() {
        for seed in TestSeeds.seeds(defaultCases: 1500) {
            var generator = SplitMix64(seed: seed)
            var model: [TestSection] = (0..<generator.int(0..<4)).map { section in
                TestSection(metadata: section, items: generator.array(maxCount: 5, values: 10))
            }
            let array = MutableObservableSectionedArray(model)
            let events = SectionedEventRecorder()
            let observation = array.observe(with: events.record)
            var log: [String] = []
            var failure: String?
            for _ in 0..<generator.int(1..<20) {
                if generator.chance(30) {
                    var edits: [SectionedEdit] = []
                    var scratch = model
                    for _ in 0..<generator.int(0..<10) {
                        let edit = SectionedEdit.random(scratch, using: &generator)
                        edit.apply(to: &scratch)
                        edits.append(edit)
                    }
                    log.append("batch \(edits)")
                    array.batchUpdate { batch in
                        for edit in edits { edit.apply(to: &batch) }
                    }
                    model = scratch
                } else {
                    let edit = SectionedEdit.random(model, using: &generator)
                    log.append(edit.description)
                    edit.apply(to: &model)
                    edit.apply(to: array)
                }
                if array.sections != model || events.events.last?.sections != model {
                    failure = "sections \(array.sections) != model \(model)"
                    break
                }
            }
            observation.dispose()
            failure = failure ?? sectionedChainProblem(events.events)
            #expect(
                failure == nil, "seed \(seed) (SIGNALS_SEED=\(seed) SIGNALS_CASES=1): \(failure ?? "") after \(log)")
            if failure != nil { return }
        }
    }

    @Test func itemMovesBetweenSectionsUseOldAndNewPositions() {
        let array = MutableObservableSectionedArray([
            TestSection(metadata: 0, items: [1, 2, 3]),
            TestSection(metadata: 1, items: [4]),
        ])
        let events = SectionedEventRecorder()
        let observation = array.observe(with: events.record)
        array.batchUpdate { batch in
            batch.moveItem(from: SectionedIndex(section: 0, item: 0), to: SectionedIndex(section: 1, item: 1))
            batch.moveSection(from: 1, to: 0)
            batch.replaceItem(at: SectionedIndex(section: 1, item: 1), with: 30)
            batch.replaceSectionMetadata(at: 1, with: 10)
        }
        observation.dispose()
        let change = events.events.last?.changeSet
        #expect(
            events.events.last?.sections == [
                TestSection(metadata: 1, items: [4, 1]), TestSection(metadata: 10, items: [2, 30]),
            ])
        #expect(change?.sectionMoves == [.init(from: 1, to: 0)])
        #expect(change?.sectionUpdates.map(\.index) == [0])
        #expect(
            change?.itemMoves == [
                .init(from: SectionedIndex(section: 0, item: 0), to: SectionedIndex(section: 0, item: 1))
            ])
        #expect(change?.itemUpdates.map(\.index) == [SectionedIndex(section: 0, item: 2)])
        #expect(sectionedChainProblem(events.events) == nil)
    }

    @Test func applyRejectsChangeSetsThatDoNotFit() {
        let sections = [TestSection(metadata: 0, items: [1, 2])]
        let bad: [SectionedArrayChangeSet<Int, Int>] = [
            SectionedArrayChangeSet(sectionDeletes: [1]),
            SectionedArrayChangeSet(itemDeletes: [SectionedIndex(section: 0, item: 2)]),
            SectionedArrayChangeSet(sectionDeletes: [0], itemDeletes: [SectionedIndex(section: 0, item: 0)]),
            SectionedArrayChangeSet(itemInserts: [.init(index: SectionedIndex(section: 1, item: 0), item: 5)]),
            SectionedArrayChangeSet(
                sectionInserts: [.init(index: 0, section: TestSection(metadata: 5))],
                itemInserts: [.init(index: SectionedIndex(section: 0, item: 0), item: 5)]
            ),
            SectionedArrayChangeSet(itemUpdates: [.init(index: SectionedIndex(section: 0, item: 9), item: 5)]),
        ]
        for change in bad {
            #expect(throws: ChangeSetError.self, "\(change)") { _ = try change.applied(to: sections) }
        }
    }

    @Test func singleEditsCarryTheirChangeSets() {
        let array = MutableObservableSectionedArray([TestSection(metadata: 0, items: [1])])
        var changes: [SectionedArrayChangeSet<Int, Int>] = []
        let observation = array.observeNext { changes.append($0.changeSet) }
        array.appendItem(2, toSection: 0)
        array.appendSection(TestSection(metadata: 1, items: [3]))
        array.moveItem(from: SectionedIndex(section: 0, item: 0), to: SectionedIndex(section: 1, item: 0))
        array.removeSection(at: 0)
        observation.dispose()
        #expect(changes.count == 5)
        #expect(changes[1].itemInserts.map(\.index) == [SectionedIndex(section: 0, item: 1)])
        #expect(changes[2].sectionInserts.map(\.index) == [1])
        #expect(
            changes[3].itemMoves == [
                .init(from: SectionedIndex(section: 0, item: 0), to: SectionedIndex(section: 1, item: 0))
            ])
        #expect(changes[4].sectionDeletes == [0])
        #expect(array.sections == [TestSection(metadata: 1, items: [1, 3])])
    }
}
