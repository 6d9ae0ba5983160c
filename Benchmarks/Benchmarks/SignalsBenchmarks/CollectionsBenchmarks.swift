import Benchmark
import Signals

// Each measured iteration is one whole operation: one diffed replacement, or one batch, delivered
// to one observer.

/// A deterministic generator, so that every run diffs the same arrays.
private struct BenchmarkGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// 10,000 distinct elements, and a copy with 1% of them changed: 50 replaced by new values, 25
/// removed, 25 inserted at other places.
private func tenThousandWithOnePercentChanged() -> (old: [Int], new: [Int]) {
    var generator = BenchmarkGenerator(state: 42)
    let old = Array(0..<10_000)
    var new = old
    for step in 0..<50 {
        new[Int.random(in: 0..<new.count, using: &generator)] = 1_000_000 + step
    }
    for _ in 0..<25 {
        new.remove(at: Int.random(in: 0..<new.count, using: &generator))
    }
    for step in 0..<25 {
        new.insert(2_000_000 + step, at: Int.random(in: 0...new.count, using: &generator))
    }
    return (old, new)
}

func registerCollectionsBenchmarks() {
    let perBatch = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        maxDuration: .seconds(2),
        maxIterations: 1000
    )

    Benchmark("replace(with:performDiff:) 10,000 elements, 1% changed", configuration: perBatch) { benchmark in
        let (old, new) = tenThousandWithOnePercentChanged()
        let array = MutableObservableArray(old)
        let observation = array.observeNext { blackHole($0.changeSet.inserts.count) }
        benchmark.startMeasurement()
        array.replace(with: new, performDiff: true)
        benchmark.stopMeasurement()
        observation.dispose()
    }

    Benchmark("batchUpdate of 1,000 inserts into 1,000 elements", configuration: perBatch) { benchmark in
        let array = MutableObservableArray(Array(0..<1000))
        let observation = array.observeNext { blackHole($0.changeSet.inserts.count) }
        benchmark.startMeasurement()
        array.batchUpdate { batch in
            for value in 0..<1000 {
                batch.insert(value, at: value * 2)
            }
        }
        benchmark.stopMeasurement()
        observation.dispose()
    }

    Benchmark("1,000 single appends, one event each", configuration: perBatch) { benchmark in
        let array = MutableObservableArray<Int>()
        let observation = array.observeNext { blackHole($0.changeSet.inserts.count) }
        benchmark.startMeasurement()
        for value in 0..<1000 {
            array.append(value)
        }
        benchmark.stopMeasurement()
        observation.dispose()
    }
}
