import Benchmark

let benchmarks: @Sendable () -> Void = {
    registerCoreBenchmarks()
    registerCollectionsBenchmarks()
}
