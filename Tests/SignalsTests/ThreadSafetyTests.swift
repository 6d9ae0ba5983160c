import Dispatch
import Signals
import Synchronization
import Testing

/// An atomic counter that can live in an array.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

@Suite("Thread safety")
struct ThreadSafetyTests {
    @Test func concurrentSendsReachEveryObserverExactlyOnce() {
        let subject = PassthroughSubject<Int>()
        let received = Atomic<Int>(0)
        let observers = (0..<5).map { _ in
            subject.observeNext { _ in received.add(1, ordering: .relaxed) }
        }
        let threads = 8
        let sendsPerThread = 2_000
        concurrently(threads: threads) { _ in
            for value in 0..<sendsPerThread { subject.send(value) }
        }
        #expect(received.load(ordering: .relaxed) == threads * sendsPerThread * observers.count)
        for observer in observers { observer.dispose() }
        #expect(subject.observerCount == 0)
    }

    @Test func concurrentObserveSendDisposeKeepsExactCounts() {
        let subject = PassthroughSubject<Int>()
        let total = Atomic<Int>(0)
        let permanent = subject.observeNext { _ in total.add(1, ordering: .relaxed) }
        let threads = 8
        let rounds = 300
        let sendsPerRound = 5
        let ownCounts = (0..<threads).map { _ in Counter() }
        let extra = Atomic<Int>(0)
        concurrently(threads: threads) { thread in
            for _ in 0..<rounds {
                let disposable = subject.observeNext { sender in
                    if sender == thread { ownCounts[thread].value.add(1, ordering: .relaxed) }
                }
                for _ in 0..<sendsPerRound { subject.send(thread) }
                disposable.dispose()
                // A send after dispose must not reach the disposed observer.
                let before = ownCounts[thread].value.load(ordering: .relaxed)
                subject.send(-1)
                if ownCounts[thread].value.load(ordering: .relaxed) != before { extra.add(1, ordering: .relaxed) }
            }
        }
        for thread in 0..<threads {
            #expect(ownCounts[thread].value.load(ordering: .relaxed) == rounds * sendsPerRound)
        }
        #expect(extra.load(ordering: .relaxed) == 0)
        #expect(total.load(ordering: .relaxed) == threads * rounds * (sendsPerRound + 1))
        permanent.dispose()
        #expect(subject.observerCount == 0)
    }

    @Test func concurrentPropertyWritesAreAllDelivered() {
        let property = Property(0)
        let received = Atomic<Int>(0)
        let disposable = property.observeNext { _ in received.add(1, ordering: .relaxed) }
        let threads = 6
        let writes = 1_000
        concurrently(threads: threads) { thread in
            for value in 0..<writes { property.value = thread * writes + value }
        }
        #expect(received.load(ordering: .relaxed) == 1 + threads * writes)
        disposable.dispose()
        #expect(property.observerCount == 0)
    }

    @Test func concurrentCombineLatestCountsEverySend() {
        let a = Property(0)
        let b = Property(0)
        let received = Atomic<Int>(0)
        let disposable = a.combineLatest(with: b).observeNext { _ in received.add(1, ordering: .relaxed) }
        concurrently(threads: 4) { thread in
            for value in 0..<500 {
                if thread.isMultiple(of: 2) { a.value = value } else { b.value = value }
            }
        }
        // One pair for the initial values (sent when b's first value arrives), then one per write.
        #expect(received.load(ordering: .relaxed) == 1 + 4 * 500)
        disposable.dispose()
    }

    @Test func concurrentScanCountsEveryValueOnce() {
        let subject = PassthroughSubject<Int>()
        let last = Mutex(0)
        let disposable = subject.scan(0, +).observeNext { sum in
            last.withLock { $0 = max($0, sum) }
        }
        concurrently(threads: 4) { _ in
            for _ in 0..<1_000 { subject.send(1) }
        }
        #expect(last.withLock { $0 } == 4_000)
        disposable.dispose()
    }
}

@Suite("Re-entrancy")
struct ReentrancyTests {
    @Test func observerSendingIntoItsSubjectGetsNestedValueFirstDepthFirst() {
        let subject = PassthroughSubject<Int>()
        let first = Recorder<Int>()
        let second = Recorder<Int>()
        subject.observeNext { value in
            first.append(value)
            if value == 1 { subject.send(2) }
        }
        subject.observeNext { second.append($0) }
        subject.send(1)
        // The nested send is delivered completely before the outer send continues.
        #expect(first.values == [1, 2])
        #expect(second.values == [2, 1])
    }

    @Test func observerDisposingItselfIsNotCalledAgain() {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        let others = Recorder<Int>()
        let handle = Mutex<(any Disposable)?>(nil)
        let disposable = subject.observeNext { value in
            recorder.append(value)
            handle.withLock { $0 }?.dispose()
            subject.send(value + 10)
        }
        handle.withLock { $0 = disposable }
        subject.observeNext { others.append($0) }
        subject.send(1)
        subject.send(2)
        #expect(recorder.values == [1])
        #expect(others.values == [11, 1, 2])
        #expect(subject.observerCount == 1)
    }

    @Test func observerDisposingALaterObserverSkipsIt() {
        let subject = PassthroughSubject<Int>()
        let later = Recorder<Int>()
        let laterHandle = Mutex<(any Disposable)?>(nil)
        subject.observeNext { _ in laterHandle.withLock { $0 }?.dispose() }
        let disposable = subject.observeNext { later.append($0) }
        laterHandle.withLock { $0 = disposable }
        subject.send(1)
        #expect(later.values.isEmpty)
    }

    @Test func observerAddedDuringDeliveryGetsOnlyLaterValues() {
        let subject = PassthroughSubject<Int>()
        let added = Recorder<Int>()
        let bag = DisposeBag()
        subject.observeNext { value in
            if value == 1 { subject.observeNext { added.append($0) }.dispose(in: bag) }
        }
        subject.send(1)
        subject.send(2)
        #expect(added.values == [2])
    }

    @Test func observerMayUseSubjectAndPropertyWithoutDeadlock() {
        let property = Property(0)
        let seen = Recorder<Int>()
        let disposable = property.observeNext { value in
            // Each of these takes the property's locks; a lock held during delivery would deadlock.
            seen.append(property.observerCount)
            if value < 3 { property.value = property.value + 1 }
        }
        #expect(property.value == 3)
        #expect(seen.values == [1, 1, 1, 1])
        disposable.dispose()
    }

    @Test func completingFromAnObserverStopsFurtherDelivery() {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        subject.observeNext { value in
            if value == 1 { subject.send(completion: ()) }
        }
        recorder.observe(subject)
        subject.send(1)
        subject.send(2)
        #expect(recorder.completionCount == 1)
        #expect(subject.observerCount == 0)
        #expect(recorder.values.count <= 1)
    }
}

@Suite("Lifetime")
struct LifetimeTests {
    final class Token {}

    @Test func disposingReleasesTheObserverClosure() {
        let subject = PassthroughSubject<Int>()
        weak var weakToken: Token?
        let disposable: any Disposable
        do {
            let token = Token()
            weakToken = token
            disposable = subject.map { _ in token }.filter { _ in true }.observeNext { _ in }
        }
        #expect(weakToken != nil)
        disposable.dispose()
        #expect(weakToken == nil)
        #expect(subject.observerCount == 0)
    }

    @Test func completionReleasesObservers() {
        let subject = PassthroughSubject<Int>()
        weak var weakToken: Token?
        do {
            let token = Token()
            weakToken = token
            subject.observeNext { _ in _ = token }
        }
        #expect(weakToken != nil)
        subject.send(completion: ())
        #expect(weakToken == nil)
    }

    @Test func releasingSubjectReleasesObservers() {
        weak var weakToken: Token?
        weak var weakSubject: PassthroughSubject<Int>?
        do {
            let subject = PassthroughSubject<Int>()
            weakSubject = subject
            let token = Token()
            weakToken = token
            subject.combineLatest(with: Property(1)).observeNext { _ in _ = token }
        }
        #expect(weakSubject == nil)
        #expect(weakToken == nil)
    }

    @Test func releasingTheSourceReleasesObserversWhoseHandlesAreKept() {
        weak var subjectToken: Token?
        weak var propertyToken: Token?
        weak var arrayToken: Token?
        weak var weakSubject: PassthroughSubject<Int>?
        weak var weakProperty: Property<Int>?
        weak var weakArray: MutableObservableArray<Int>?
        var handles: [any Disposable] = []
        do {
            let tokens = (Token(), Token(), Token())
            (subjectToken, propertyToken, arrayToken) = tokens
            let subject = PassthroughSubject<Int>()
            let property = Property(0)
            let array = MutableObservableArray([1])
            (weakSubject, weakProperty, weakArray) = (subject, property, array)
            handles.append(subject.observeNext { [token = tokens.0] _ in _ = token })
            handles.append(property.observeNext { [token = tokens.1] _ in _ = token })
            handles.append(array.observe { [token = tokens.2] _ in _ = token })
        }
        // The handles hold their registries, but neither the sources nor, once these are gone, the observers.
        #expect(weakSubject == nil)
        #expect(weakProperty == nil)
        #expect(weakArray == nil)
        #expect(subjectToken == nil)
        #expect(propertyToken == nil)
        #expect(arrayToken == nil)
        for handle in handles { handle.dispose() }
    }

    @Test func lateObserverOfCompletedSubjectGetsCompletion() {
        let subject = PassthroughSubject<Int>()
        subject.send(completion: ())
        let recorder = Recorder<Int>()
        let disposable = recorder.observe(subject)
        #expect(recorder.completionCount == 1)
        disposable.dispose()
        #expect(subject.observerCount == 0)
    }
}
