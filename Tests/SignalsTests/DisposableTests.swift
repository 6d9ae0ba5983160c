import Signals
import Testing

@Suite("Disposables")
struct DisposableTests {
    @Test func compositeDisposesAllAndLateAdditionsAtOnce() {
        let a = PassthroughSubject<Int>()
        let composite = CompositeDisposable()
        composite += a.observeNext { _ in }
        composite.add(a.observeNext { _ in })
        #expect(a.observerCount == 2)
        composite.dispose()
        #expect(a.observerCount == 0)
        let late = a.observeNext { _ in }
        composite.add(late)
        #expect(late.isDisposed)
        #expect(composite.isDisposed)
    }

    @Test func droppingACompositeDoesNotEndTheObservation() {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        do {
            _ = subject.merge(with: Signal<Int>.never).observeNext { recorder.append($0) }
        }
        subject.send(1)
        #expect(recorder.values == [1])
    }

    @Test func serialDisposesPreviousInner() {
        let subject = PassthroughSubject<Int>()
        let serial = SerialDisposable()
        serial.inner = subject.observeNext { _ in }
        serial.inner = subject.observeNext { _ in }
        #expect(subject.observerCount == 1)
        serial.dispose()
        #expect(subject.observerCount == 0)
        let late = subject.observeNext { _ in }
        serial.inner = late
        #expect(late.isDisposed)
    }

    @Test func blockDisposableRunsOnce() {
        let counter = Recorder<Int>()
        let disposable = BlockDisposable { counter.append(1) }
        concurrently(threads: 4) { _ in disposable.dispose() }
        #expect(counter.values == [1])
        #expect(disposable.isDisposed)
    }

    @Test func handleEventsAndEraseValues() {
        let seen = Recorder<Int>()
        let triggers = Recorder<Void>()
        triggers.observe(
            Signal.sequence([1, 2]).handleEvents { if case .next(let v) = $0 { seen.append(v) } }.eraseValues())
        #expect(seen.values == [1, 2])
        #expect(triggers.count == 2)
        #expect(triggers.completionCount == 1)
    }
}
