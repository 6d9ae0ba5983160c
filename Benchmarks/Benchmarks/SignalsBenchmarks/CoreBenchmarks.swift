import Benchmark
import Foundation
import OpenCombine
import Signals

// Each benchmark runs its operation 1000 times per measured iteration (`scalingFactor: .kilo`);
// run.sh divides by 1000 to print nanoseconds and allocations per operation. Names are
// "<case> / <implementation>" so run.sh can put the implementations of one case side by side.

/// Closures kept out of the optimizer's sight, so that the floor measures real indirect calls.
final class ClosureBox: @unchecked Sendable {
    var closures: [(Int) -> Void]

    init(count: Int) {
        closures = (0..<count).map { _ in { value in blackHole(value) } }
    }
}

/// A combineLatest of two OpenCombine subjects built by hand (OpenCombine has none): the latest
/// values under a lock, the pair sent into a subject once both are known.
final class OpenCombineLatest<A, B>: @unchecked Sendable {
    let output = OpenCombine.PassthroughSubject<(A, B), Never>()
    private let lock = NSLock()
    private var first: A?
    private var second: B?
    private var cancellables: [AnyCancellable] = []

    init(_ a: OpenCombine.PassthroughSubject<A, Never>, _ b: OpenCombine.PassthroughSubject<B, Never>) {
        a.sink { [unowned self] value in
            lock.lock()
            first = value
            let pair = second.map { (value, $0) }
            lock.unlock()
            if let pair { output.send(pair) }
        }
        .store(in: &cancellables)
        b.sink { [unowned self] value in
            lock.lock()
            second = value
            let pair = first.map { ($0, value) }
            lock.unlock()
            if let pair { output.send(pair) }
        }
        .store(in: &cancellables)
    }
}

func registerCoreBenchmarks() {
    let perOperation = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 100_000
    )

    // MARK: send to 1 observer

    Benchmark("send to 1 observer / closure", configuration: perOperation) { benchmark in
        let box = ClosureBox(count: 1)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { box.closures[0](index) }
    }

    Benchmark("send to 1 observer / Signals", configuration: perOperation) { benchmark in
        let subject = Signals.PassthroughSubject<Int>()
        let disposable = subject.observeNext { blackHole($0) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { subject.send(index) }
        benchmark.stopMeasurement()
        disposable.dispose()
    }

    Benchmark("send to 1 observer / OpenCombine", configuration: perOperation) { benchmark in
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let cancellable = subject.sink { blackHole($0) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { subject.send(index) }
        benchmark.stopMeasurement()
        cancellable.cancel()
    }

    // MARK: send to 10 observers

    Benchmark("send to 10 observers / closure", configuration: perOperation) { benchmark in
        let box = ClosureBox(count: 10)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            for closure in box.closures { closure(index) }
        }
    }

    Benchmark("send to 10 observers / Signals", configuration: perOperation) { benchmark in
        let subject = Signals.PassthroughSubject<Int>()
        let disposables = (0..<10).map { _ in subject.observeNext { blackHole($0) } }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { subject.send(index) }
        benchmark.stopMeasurement()
        for disposable in disposables { disposable.dispose() }
    }

    Benchmark("send to 10 observers / OpenCombine", configuration: perOperation) { benchmark in
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let cancellables = (0..<10).map { _ in subject.sink { blackHole($0) } }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { subject.send(index) }
        benchmark.stopMeasurement()
        for cancellable in cancellables { cancellable.cancel() }
    }

    // MARK: property set, 1 observer

    Benchmark("property set 1 observer / Signals", configuration: perOperation) { benchmark in
        let property = Signals.Property(0)
        let disposable = property.observeNext { blackHole($0) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { property.value = index }
        benchmark.stopMeasurement()
        disposable.dispose()
    }

    Benchmark("property set 1 observer / OpenCombine", configuration: perOperation) { benchmark in
        let subject = OpenCombine.CurrentValueSubject<Int, Never>(0)
        let cancellable = subject.sink { blackHole($0) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { subject.value = index }
        benchmark.stopMeasurement()
        cancellable.cancel()
    }

    // MARK: map + filter chain, 1 send

    Benchmark("map + filter chain / Signals", configuration: perOperation) { benchmark in
        let subject = Signals.PassthroughSubject<Int>()
        let disposable = subject.map { $0 &+ 1 }.filter { $0 & 1 == 0 }.observeNext { blackHole($0) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { subject.send(index) }
        benchmark.stopMeasurement()
        disposable.dispose()
    }

    Benchmark("map + filter chain / OpenCombine", configuration: perOperation) { benchmark in
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let cancellable = subject.map { $0 &+ 1 }.filter { $0 & 1 == 0 }.sink { blackHole($0) }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { subject.send(index) }
        benchmark.stopMeasurement()
        cancellable.cancel()
    }

    // MARK: combineLatest, 1 send

    Benchmark("combineLatest / Signals", configuration: perOperation) { benchmark in
        let a = Signals.PassthroughSubject<Int>()
        let b = Signals.PassthroughSubject<Int>()
        let disposable = a.combineLatest(with: b).observeNext { blackHole($0.0 &+ $0.1) }
        b.send(1)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { a.send(index) }
        benchmark.stopMeasurement()
        disposable.dispose()
    }

    Benchmark("combineLatest / OpenCombine (hand-made)", configuration: perOperation) { benchmark in
        let a = OpenCombine.PassthroughSubject<Int, Never>()
        let b = OpenCombine.PassthroughSubject<Int, Never>()
        let combined = OpenCombineLatest(a, b)
        let cancellable = combined.output.sink { blackHole($0.0 &+ $0.1) }
        b.send(1)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { a.send(index) }
        benchmark.stopMeasurement()
        cancellable.cancel()
    }

    // MARK: observe + dispose

    Benchmark("observe + dispose / Signals", configuration: perOperation) { benchmark in
        let subject = Signals.PassthroughSubject<Int>()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            subject.observeNext { blackHole($0) }.dispose()
        }
    }

    Benchmark("observe + dispose / OpenCombine", configuration: perOperation) { benchmark in
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            subject.sink { blackHole($0) }.cancel()
        }
    }
}
