import Dispatch
import Foundation
import Signals
import Testing

@Suite("Time-based operators")
struct TimeOperatorTests {
    @Test func manualClockRunsActionsInDueOrder() {
        let clock = ManualClock()
        let recorder = Recorder<String>()
        _ = clock.schedule(after: .seconds(2)) { recorder.append("b") }
        _ = clock.schedule(after: .seconds(1)) { recorder.append("a") }
        let cancelled = clock.schedule(after: .seconds(1)) { recorder.append("cancelled") }
        cancelled.dispose()
        clock.advance(by: .milliseconds(999))
        #expect(recorder.values.isEmpty)
        clock.advance(by: .seconds(5))
        #expect(recorder.values == ["a", "b"])
        #expect(clock.now == .milliseconds(5999))
        #expect(clock.pendingCount == 0)
    }

    @Test func debounceSendsAfterQuietPeriod() {
        let clock = ManualClock()
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(subject.debounce(for: .milliseconds(100), clock: clock))
        subject.send(1)
        clock.advance(by: .milliseconds(50))
        subject.send(2)
        clock.advance(by: .milliseconds(99))
        #expect(recorder.values.isEmpty)
        clock.advance(by: .milliseconds(1))
        #expect(recorder.values == [2])
        subject.send(3)
        clock.advance(by: .milliseconds(100))
        #expect(recorder.values == [2, 3])
        #expect(clock.pendingCount == 0)
    }

    @Test func debounceFlushesPendingValueOnCompletion() {
        let clock = ManualClock()
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(subject.debounce(for: .seconds(1), clock: clock))
        subject.send(1)
        subject.send(completion: ())
        #expect(recorder.values == [1])
        #expect(recorder.completionCount == 1)
        clock.advance(by: .seconds(2))
        #expect(recorder.values == [1])
    }

    @Test func debounceDisposeCancelsTimer() {
        let clock = ManualClock()
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        let disposable = recorder.observe(subject.debounce(for: .seconds(1), clock: clock))
        subject.send(1)
        disposable.dispose()
        clock.advance(by: .seconds(2))
        #expect(recorder.values.isEmpty)
        #expect(subject.observerCount == 0)
    }

    @Test func throttleLatestSendsLeadingThenLatestPerInterval() {
        let clock = ManualClock()
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(subject.throttle(for: .seconds(1), clock: clock, latest: true))
        subject.send(1)
        #expect(recorder.values == [1])
        clock.advance(by: .milliseconds(200))
        subject.send(2)
        subject.send(3)
        #expect(recorder.values == [1])
        clock.advance(by: .milliseconds(800))
        #expect(recorder.values == [1, 3])
        clock.advance(by: .seconds(5))
        subject.send(4)
        #expect(recorder.values == [1, 3, 4])
    }

    @Test func throttleFirstKeepsFirstValueOfInterval() {
        let clock = ManualClock()
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(subject.throttle(for: .seconds(1), clock: clock, latest: false))
        subject.send(1)
        subject.send(2)
        subject.send(3)
        clock.advance(by: .seconds(1))
        #expect(recorder.values == [1, 2])
    }

    @Test func debounceOnRealDispatchClock() {
        let clock = DispatchQueueClock(queue: DispatchQueue(label: "debounce-test"))
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(subject.debounce(for: .milliseconds(20), clock: clock))
        subject.send(1)
        subject.send(2)
        #expect(recorder.wait(forCount: 1))
        #expect(recorder.values.last == 2)
    }
}

@Suite("Execution contexts")
struct ExecutionContextTests {
    @Test func receiveOnQueueKeepsOrderAndThread() {
        let queue = DispatchQueue(label: "receive-test")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 42)
        let subject = PassthroughSubject<Int>()
        let onQueue = Recorder<Bool>()
        let recorder = Recorder<Int>()
        let disposable = subject.receive(on: .queue(queue)).observeNext { value in
            onQueue.append(DispatchQueue.getSpecific(key: key) == 42)
            recorder.append(value)
        }
        for value in 0..<100 { subject.send(value) }
        #expect(recorder.wait(forCount: 100))
        #expect(recorder.values == Array(0..<100))
        #expect(onQueue.values.allSatisfy { $0 })
        disposable.dispose()
    }

    @Test func disposeDropsEventsNotYetRun() {
        let queue = DispatchQueue(label: "dispose-test")
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        let disposable = recorder.observe(subject.receive(on: .queue(queue)))
        subject.send(1)
        disposable.dispose()
        gate.signal()
        queue.sync {}
        #expect(recorder.values.isEmpty)
    }

    @Test func immediateContextRunsInline() {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        recorder.observe(subject.receive(on: .immediate))
        subject.send(1)
        #expect(recorder.values == [1])
    }

    @Test func mainActorContextRunsIsolatedToMainActor() async {
        let subject = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        let disposable = subject.receive(on: .mainActor).observeNext { value in
            MainActor.assumeIsolated { recorder.append(value) }
        }
        DispatchQueue.global().async { subject.send(5) }
        #expect(await recorder.waitAsync(forCount: 1))
        #expect(recorder.values == [5])
        disposable.dispose()
    }

    @Test func mainQueueContext() async {
        let subject = PassthroughSubject<Int>()
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        defer { DispatchQueue.main.setSpecific(key: key, value: nil) }
        let recorder = Recorder<Bool>()
        let disposable = subject.receive(on: .main).observeNext { _ in
            recorder.append(DispatchQueue.getSpecific(key: key) == "main")
        }
        subject.send(1)
        #expect(await recorder.waitAsync(forCount: 1))
        #expect(recorder.values == [true])
        disposable.dispose()
    }
}
