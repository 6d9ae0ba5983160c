import Signals
import Synchronization
import Testing

@Suite("AsyncSequence")
struct AsyncSequenceTests {
    @Test func valuesOfASignal() async {
        var collected: [Int] = []
        for await value in Signal.sequence(1...5).values {
            collected.append(value)
        }
        #expect(collected == [1, 2, 3, 4, 5])
    }

    @Test func valuesFromAnotherThread() async {
        let subject = PassthroughSubject<Int>()
        let stream = subject.values
        #expect(subject.observerCount == 1)
        Task.detached {
            for value in 0..<10 { subject.send(value) }
            subject.send(completion: ())
        }
        var collected: [Int] = []
        for await value in stream { collected.append(value) }
        #expect(collected == Array(0..<10))
    }

    @Test func stoppingIterationDisposesTheObservation() async {
        let subject = PassthroughSubject<Int>()
        do {
            let stream = subject.values(bufferingPolicy: .bufferingNewest(4))
            subject.send(1)
            var iterator = stream.makeAsyncIterator()
            #expect(await iterator.next() == 1)
        }
        #expect(subject.observerCount == 0)
    }

    @Test func signalFromAsyncSequence() async {
        let recorder = Recorder<Int>()
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let disposable = recorder.observe(Signal(sequence: stream))
        continuation.yield(1)
        continuation.yield(2)
        continuation.finish()
        #expect(await recorder.waitAsync(forCount: 2))
        #expect(recorder.values == [1, 2])
        disposable.dispose()
    }

    @Test func disposingCancelsTheIteratingTask() async {
        let terminated = Recorder<Bool>()
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        continuation.onTermination = { termination in
            if case .cancelled = termination { terminated.append(true) }
        }
        let recorder = Recorder<Int>()
        let disposable = recorder.observe(Signal(sequence: stream))
        continuation.yield(1)
        #expect(await recorder.waitAsync(forCount: 1))
        disposable.dispose()
        #expect(await terminated.waitAsync(forCount: 1))
        continuation.yield(2)
        #expect(recorder.values == [1])
        #expect(recorder.completionCount == 0)
    }
}
