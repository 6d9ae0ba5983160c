import Signals
import Testing

@Suite("Operators")
struct OperatorTests {
    @Test func mapTransformsEachValueAndForwardsCompletion() {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<String>()
        recorder.observe(subject.map { "v\($0)" })
        subject.send(1)
        subject.send(2)
        subject.send(completion: ())
        #expect(recorder.values == ["v1", "v2"])
        #expect(recorder.completionCount == 1)
    }

    @Test func mapKeyPath() {
        let recorder = Recorder<Int>()
        recorder.observe(Signal.sequence(["a", "bcd"]).map(\.count))
        #expect(recorder.values == [1, 3])
    }

    @Test func compactMapDropsNil() {
        let recorder = Recorder<Int>()
        recorder.observe(Signal.sequence(["1", "x", "3"]).compactMap { Int($0) })
        #expect(recorder.values == [1, 3])
        #expect(recorder.completionCount == 1)
    }

    @Test func filterKeepsMatchingValues() {
        let recorder = Recorder<Int>()
        recorder.observe(Signal.sequence(1...6).filter { $0.isMultiple(of: 2) })
        #expect(recorder.values == [2, 4, 6])
    }

    @Test func removeDuplicatesDropsRepeats() {
        let recorder = Recorder<Int>()
        recorder.observe(Signal.sequence([1, 1, 2, 2, 2, 1, 3, 3]).removeDuplicates())
        #expect(recorder.values == [1, 2, 1, 3])
    }

    @Test func removeDuplicatesByPredicate() {
        let recorder = Recorder<String>()
        recorder.observe(
            Signal.sequence(["a", "A", "b", "B", "a"]).removeDuplicates { $0.lowercased() == $1.lowercased() })
        #expect(recorder.values == ["a", "b", "a"])
    }

    @Test func removeDuplicatesKeepsStatePerObserver() {
        let subject = PassthroughSubject<Int>()
        let deduplicated = subject.removeDuplicates()
        let first = Recorder<Int>()
        first.observe(deduplicated)
        subject.send(1)
        let second = Recorder<Int>()
        second.observe(deduplicated)
        subject.send(1)
        #expect(first.values == [1])
        #expect(second.values == [1])
    }

    @Test func scanAccumulates() {
        let recorder = Recorder<Int>()
        recorder.observe(Signal.sequence([1, 2, 3, 4]).scan(10, +))
        #expect(recorder.values == [11, 13, 16, 20])
    }

    @Test func zipPreviousPairsValues() {
        let recorder = Recorder<String>()
        recorder.observe(
            Signal.sequence([1, 2, 3]).zipPrevious().map { "\($0.previous.map(String.init) ?? "-")>\($0.current)" })
        #expect(recorder.values == ["->1", "1>2", "2>3"])
    }

    @Test func prefixTakesCountThenCompletes() {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(subject.prefix(2))
        for value in 1...5 { subject.send(value) }
        #expect(recorder.values == [1, 2])
        #expect(recorder.completionCount == 1)
        #expect(subject.observerCount == 0)
    }

    @Test func dropFirstSkipsValues() {
        let recorder = Recorder<Int>()
        recorder.observe(Signal.sequence(1...4).dropFirst(2))
        #expect(recorder.values == [3, 4])
    }

    @Test func takeUntilCompletesOnTriggerAndReleasesBoth() {
        let source = PassthroughSubject<Int>()
        let trigger = PassthroughSubject<Void>()
        let recorder = Recorder<Int>()
        recorder.observe(source.take(until: trigger))
        source.send(1)
        source.send(2)
        trigger.send()
        source.send(3)
        #expect(recorder.values == [1, 2])
        #expect(recorder.completionCount == 1)
        #expect(source.observerCount == 0)
        #expect(trigger.observerCount == 0)
    }

    @Test func takeUntilIgnoresTriggerCompletion() {
        let source = PassthroughSubject<Int>()
        let trigger = PassthroughSubject<Void>()
        let recorder = Recorder<Int>()
        recorder.observe(source.prefix(untilOutputFrom: trigger))
        trigger.send(completion: ())
        source.send(1)
        #expect(recorder.values == [1])
        #expect(recorder.completionCount == 0)
    }

    @Test func takeUntilPropertyTriggerCompletesAtOnce() {
        let source = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(source.take(until: Property(0)))
        source.send(1)
        #expect(recorder.values.isEmpty)
        #expect(recorder.completionCount == 1)
        #expect(source.observerCount == 0)
    }

    @Test func combineLatestWaitsForBothThenSendsLatest() {
        let a = PassthroughSubject<Int>()
        let b = PassthroughSubject<String>()
        let recorder = Recorder<String>()
        recorder.observe(a.combineLatest(with: b) { "\($0)\($1)" })
        a.send(1)
        a.send(2)
        b.send("x")
        a.send(3)
        b.send("y")
        #expect(recorder.values == ["2x", "3x", "3y"])
        a.send(completion: ())
        #expect(recorder.completionCount == 0)
        b.send("z")
        b.send(completion: ())
        #expect(recorder.values == ["2x", "3x", "3y", "3z"])
        #expect(recorder.completionCount == 1)
    }

    @Test func combineLatestCompletesWhenOneEndsEmpty() {
        let a = PassthroughSubject<Int>()
        let b = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(a.combineLatest(with: b, +))
        a.send(1)
        b.send(completion: ())
        #expect(recorder.completionCount == 1)
    }

    @Test func combineLatestOfThree() {
        let a = Property(1)
        let b = Property("b")
        let c = PassthroughSubject<Bool>()
        let recorder = Recorder<String>()
        recorder.observe(a.combineLatest(with: b, c).map { "\($0)\($1)\($2)" })
        #expect(recorder.values.isEmpty)
        c.send(true)
        a.value = 2
        #expect(recorder.values == ["1btrue", "2btrue"])
    }

    @Test func combineLatestOfCollection() {
        let subjects = (0..<3).map { _ in PassthroughSubject<Int>() }
        let recorder = Recorder<[Int]>()
        recorder.observe(combineLatest(subjects))
        subjects[0].send(1)
        subjects[1].send(2)
        #expect(recorder.values.isEmpty)
        subjects[2].send(3)
        subjects[1].send(5)
        #expect(recorder.values == [[1, 2, 3], [1, 5, 3]])
        for subject in subjects { subject.send(completion: ()) }
        #expect(recorder.completionCount == 1)
    }

    @Test func combineLatestOfEmptyCollectionCompletes() {
        let recorder = Recorder<[Int]>()
        recorder.observe(combineLatest([Signal<Int>]()))
        #expect(recorder.values.isEmpty)
        #expect(recorder.completionCount == 1)
    }

    @Test func mergeInterleavesAndCompletesWhenAllComplete() {
        let a = PassthroughSubject<Int>()
        let b = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(a.merge(with: b))
        a.send(1)
        b.send(2)
        a.send(3)
        a.send(completion: ())
        #expect(recorder.completionCount == 0)
        b.send(4)
        b.send(completion: ())
        #expect(recorder.values == [1, 2, 3, 4])
        #expect(recorder.completionCount == 1)
    }

    @Test func mergeOfCollection() {
        let recorder = Recorder<Int>()
        recorder.observe(merge([Signal.sequence([1, 2]), Signal.sequence([3])]))
        #expect(recorder.values == [1, 2, 3])
        #expect(recorder.completionCount == 1)
    }

    @Test func zipPairsInOrder() {
        let a = PassthroughSubject<Int>()
        let b = PassthroughSubject<String>()
        let recorder = Recorder<String>()
        recorder.observe(a.zip(with: b).map { "\($0)\($1)" })
        a.send(1)
        a.send(2)
        b.send("x")
        b.send("y")
        b.send("z")
        #expect(recorder.values == ["1x", "2y"])
        a.send(completion: ())
        #expect(recorder.completionCount == 1)
        #expect(b.observerCount == 0)
    }

    @Test func zipDropsOldestBeyondBufferLimit() {
        let a = PassthroughSubject<Int>()
        let b = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(a.zip(with: b, bufferLimit: 2).map { $0 * 10 + $1 })
        for value in 1...4 { a.send(value) }
        b.send(1)
        b.send(2)
        #expect(recorder.values == [31, 42])
    }

    @Test func flatMapLatestSwitchesToNewestInner() {
        let outer = PassthroughSubject<Int>()
        let inners = [PassthroughSubject<String>(), PassthroughSubject<String>()]
        let recorder = Recorder<String>()
        recorder.observe(outer.flatMapLatest { inners[$0] })
        outer.send(0)
        inners[0].send("a")
        outer.send(1)
        inners[0].send("dropped")
        inners[1].send("b")
        #expect(recorder.values == ["a", "b"])
        #expect(inners[0].observerCount == 0)
        outer.send(completion: ())
        #expect(recorder.completionCount == 0)
        inners[1].send(completion: ())
        #expect(recorder.completionCount == 1)
    }

    @Test func justSequenceCompletedNever() {
        let recorder = Recorder<Int>()
        recorder.observe(Signal.just(7))
        recorder.observe(Signal.completed)
        recorder.observe(Signal.never)
        #expect(recorder.values == [7])
        #expect(recorder.completionCount == 2)
    }

    @Test func disposingStopsOperatorChain() {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        let disposable = recorder.observe(subject.map { $0 + 1 }.filter { _ in true }.removeDuplicates())
        subject.send(1)
        disposable.dispose()
        subject.send(2)
        #expect(recorder.values == [2])
        #expect(subject.observerCount == 0)
    }
}
