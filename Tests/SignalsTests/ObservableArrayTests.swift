import Dispatch
import Signals
import Synchronization
import Testing

@Suite("Observable arrays")
struct ObservableArrayTests {
    @Test func observingSendsTheCurrentArrayAsAResetFirst() {
        let array = MutableObservableArray([1, 2])
        let events = ArrayEventRecorder<Int>()
        array.observe(with: events.record)
        array.append(3)
        #expect(events.events.count == 2)
        #expect(events.events[0].changeSet == .reset(oldCount: 0, to: [1, 2]))
        #expect(events.events[1].changeSet == ArrayChangeSet(inserts: [.init(index: 2, element: 3)]))
        #expect(events.events[1].array == [1, 2, 3])
    }

    @Test func singleEditsCarryTheirChangeSets() {
        let array = MutableObservableArray(["a", "b", "c", "d"])
        var changes: [ArrayChangeSet<String>] = []
        let observation = array.observeNext { changes.append($0.changeSet) }
        array.insert("x", at: 1)
        array.remove(at: 0)
        array.move(from: 0, to: 3)
        array[1] = "C"
        array.removeAll()
        observation.dispose()
        #expect(
            Array(changes.dropFirst()) == [
                ArrayChangeSet(inserts: [.init(index: 1, element: "x")]),
                ArrayChangeSet(deletes: [0]),
                ArrayChangeSet(moves: [.init(from: 0, to: 3)]),
                ArrayChangeSet(updates: [.init(index: 1, element: "C")]),
                ArrayChangeSet(deletes: [0, 1, 2, 3]),
            ]
        )
    }

    @Test func batchUpdateSendsOneEventWithTheFewestMoves() {
        let array = MutableObservableArray(["a", "b", "c", "d", "e"])
        var events: [ObservableArrayEvent<String>] = []
        let observation = array.observeNext { events.append($0) }
        let result = array.batchUpdate { batch -> Int in
            batch.remove(at: 0)  // b c d e
            batch.move(from: 3, to: 0)  // e b c d
            batch[2] = "C"  // e b C d
            batch.insert("x", at: 4)  // e b C d x
            batch.append("gone")
            batch.remove(at: 5)
            return batch.count
        }
        observation.dispose()
        #expect(result == 5)
        #expect(events.count == 2)
        #expect(events[1].array == ["e", "b", "C", "d", "x"])
        #expect(
            events[1].changeSet
                == ArrayChangeSet(
                    deletes: [0],
                    inserts: [.init(index: 4, element: "x")],
                    updates: [.init(index: 2, element: "C")],
                    moves: [.init(from: 4, to: 0)]
                )
        )
    }

    @Test func batchWithoutEditsSendsNothing() {
        let array = MutableObservableArray([1])
        var count = 0
        let observation = array.observeNext { _ in count += 1 }
        array.batchUpdate { batch in _ = batch.count }
        array.batchUpdate { batch in
            batch.append(2)
            batch.remove(at: 1)
        }
        observation.dispose()
        #expect(count == 1)
    }

    @Test func throwingBatchChangesNothing() {
        struct Stop: Error {}
        let array = MutableObservableArray([1, 2])
        #expect(throws: Stop.self) {
            try array.batchUpdate { batch in
                batch.append(3)
                throw Stop()
            }
        }
        #expect(array.array == [1, 2])
        array.append(4)  // the writer lock was released
        #expect(array.array == [1, 2, 4])
    }

    @Test func diffReplacementUsesMovesAndKeepsEqualArraysSilent() {
        let array = MutableObservableArray([1, 2, 3, 4])
        var changes: [ArrayChangeSet<Int>] = []
        let observation = array.observeNext { changes.append($0.changeSet) }
        array.replace(with: [4, 1, 2, 3], performDiff: true)
        array.replace(with: [4, 1, 2, 3], performDiff: true)
        array.replace(with: [9], performDiff: false)
        observation.dispose()
        #expect(changes.count == 3)
        #expect(changes[1] == ArrayChangeSet(moves: [.init(from: 3, to: 0)]))
        #expect(changes[2] == .reset(oldCount: 4, to: [9]))
    }

    @Test func filterTurnsUpdatesIntoInsertsDeletesAndUpdates() {
        let array = MutableObservableArray([1, 2, 3, 4])
        var changes: [ArrayChangeSet<Int>] = []
        let observation = array.filterCollection { $0.isMultiple(of: 2) }.observeNext { changes.append($0.changeSet) }
        array[0] = 10  // starts matching: [10, 2, 4]
        array[1] = 5  // stops matching: [10, 4]
        array[3] = 8  // still matching: [10, 8]
        array.append(7)  // never matches: no event
        array.move(from: 4, to: 0)  // moves a non-matching element: no event
        observation.dispose()
        #expect(changes.first == .reset(oldCount: 0, to: [2, 4]))
        #expect(changes[1] == ArrayChangeSet(inserts: [.init(index: 0, element: 10)]))
        #expect(changes[2] == ArrayChangeSet(deletes: [1]))
        #expect(changes[3] == ArrayChangeSet(updates: [.init(index: 1, element: 8)]))
        #expect(changes.count == 4)
    }

    @Test func mapCallsTheTransformOnlyForNewElements() {
        let array = MutableObservableArray(Array(0..<100))
        let calls = CallCounter()
        var last: [String] = []
        let observation = array.mapCollection { value -> String in
            calls.increment()
            return "\(value)"
        }.observeNext { last = $0.array }
        array.append(100)
        array.move(from: 0, to: 50)
        array.remove(at: 3)
        observation.dispose()
        #expect(calls.value == 101)
        #expect(last == array.array.map { "\($0)" })
    }

    @Test func bindingFollowsTheSourceAndResetsAfterForeignWrites() {
        let source = MutableObservableArray([1, 2, 3])
        let target = MutableObservableArray([9])
        var changes: [ArrayChangeSet<Int>] = []
        let watch = target.observeNext { changes.append($0.changeSet) }
        let binding = source.filterCollection { $0 > 1 }.bindCollection(to: target)
        source.append(4)
        target.append(0)  // someone else writes the target
        source.append(5)
        binding.dispose()
        source.append(6)
        watch.dispose()
        #expect(target.array == [2, 3, 4, 5])
        #expect(
            changes == [
                .reset(oldCount: 0, to: [9]),
                .reset(oldCount: 1, to: [2, 3]),
                ArrayChangeSet(inserts: [.init(index: 2, element: 4)]),
                ArrayChangeSet(inserts: [.init(index: 3, element: 0)]),
                .reset(oldCount: 4, to: [2, 3, 4, 5]),
            ]
        )
    }

    @Test func bindingOperatorKeepsChangeSets() {
        let source = MutableObservableArray([1, 2, 3])
        let target = MutableObservableArray<Int>()
        var changes: [ArrayChangeSet<Int>] = []
        let watch = target.observeNext { changes.append($0.changeSet) }
        let binding = target <~ source.mapCollection { $0 * 10 }
        source.append(4)
        source.remove(at: 0)
        binding.dispose()
        watch.dispose()
        #expect(target.array == [20, 30, 40])
        #expect(
            Array(changes.suffix(2)) == [
                ArrayChangeSet(inserts: [.init(index: 3, element: 40)]),
                ArrayChangeSet(deletes: [0]),
            ]
        )
    }

    @Test func applyRejectsChangeSetsThatDoNotFit() {
        var array = [1, 2, 3]
        let bad: [(ArrayChangeSet<Int>, ChangeSetError.Code)] = [
            (ArrayChangeSet(deletes: [3]), .indexOutOfRange),
            (ArrayChangeSet(deletes: [1, 1]), .conflictingIndices),
            (ArrayChangeSet(deletes: [0], moves: [.init(from: 0, to: 1)]), .conflictingIndices),
            (ArrayChangeSet(inserts: [.init(index: 5, element: 0)]), .indexOutOfRange),
            (ArrayChangeSet(inserts: [.init(index: -1, element: 0)]), .indexOutOfRange),
            (ArrayChangeSet(inserts: [.init(index: 1, element: 0), .init(index: 1, element: 0)]), .conflictingIndices),
            (ArrayChangeSet(deletes: [0], updates: [.init(index: 0, element: 0)]), .conflictingIndices),
            (ArrayChangeSet(deletes: [0, 1, 2, 3]), .indexOutOfRange),
        ]
        for (change, code) in bad {
            let result = Result { () throws(ChangeSetError) in try change.apply(to: &array) }
            guard case .failure(let error) = result else {
                Issue.record("\(change) applied to \(array)")
                continue
            }
            #expect(error.code == code, "\(change): \(error)")
            #expect(array == [1, 2, 3])
        }
    }

    @Test func applyFollowsTheIndexConvention() throws {
        // Deletes and move sources name old indices, inserts and move destinations new ones, and
        // an update names the old index of an element that also moves.
        let change = ArrayChangeSet<String>(
            deletes: [1],
            inserts: [.init(index: 0, element: "x")],
            updates: [.init(index: 3, element: "D")],
            moves: [.init(from: 3, to: 1)]
        )
        #expect(try change.applied(to: ["a", "b", "c", "d"]) == ["x", "D", "a", "c"])
    }

    @Test func observersMayWriteTheArrayTheyObserve() {
        let array = MutableObservableArray<Int>()
        let events = ArrayEventRecorder<Int>()
        let writer = array.observeNext { event in
            if event.array.count < 5 { array.append(event.array.count) }
        }
        array.observe(with: events.record)
        writer.dispose()
        #expect(array.array == [0, 1, 2, 3, 4])
        #expect(chainProblem(events.events) == nil)
        #expect(events.last == [0, 1, 2, 3, 4])
    }

    @Test func concurrentWritersDeliverAValidChainToEveryObserver() {
        let array = MutableObservableArray<Int>()
        let first = ArrayEventRecorder<Int>()
        let filtered = ArrayEventRecorder<Int>()
        array.observe(with: first.record)
        array.filterCollection { $0.isMultiple(of: 3) }.observe(with: filtered.record)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for value in 0..<200 {
                if value.isMultiple(of: 10) {
                    array.batchUpdate { batch in
                        batch.insert(thread, at: 0)
                        if batch.count > 3 { batch.move(from: 1, to: batch.count - 1) }
                    }
                } else if value.isMultiple(of: 7), array.count > 2 {
                    array.replace(at: 0, with: value)
                    array.append(value)
                } else {
                    array.append(value)
                }
            }
        }
        #expect(array.count == 800)
        #expect(chainProblem(first.events) == nil)
        #expect(first.last == array.array)
        #expect(chainProblem(filtered.events) == nil)
        #expect(filtered.last == array.array.filter { $0.isMultiple(of: 3) })
    }

    @Test func deallocationCompletesObservers() {
        let events = ArrayEventRecorder<Int>()
        var array: MutableObservableArray<Int>? = MutableObservableArray([1])
        array?.observe(with: events.record)
        array = nil
        #expect(events.completed)
        #expect(events.events.count == 1)
    }

    @Test func disposedObserversGetNothingMore() {
        let array = MutableObservableArray([1])
        let events = ArrayEventRecorder<Int>()
        let observation = array.observe(with: events.record)
        observation.dispose()
        array.append(2)
        #expect(events.events.count == 1)
        #expect(array.observerCount == 0)
    }

    @Test func readOnlyViewObservesTheSameArray() {
        let array = MutableObservableArray([1])
        let view = array.readOnly
        let events = ArrayEventRecorder<Int>()
        view.observe(with: events.record)
        array.append(2)
        #expect(view.array == [1, 2])
        #expect(events.last == [1, 2])
    }
}

final class CallCounter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
