// swift-tools-version: 6.2
import PackageDescription

// Benchmarks of the Signals module against OpenCombine and a plain closure call, kept out of the
// main package so that its build never pulls benchmark dependencies. Run `./run.sh` for the table.
let package = Package(
    name: "SignalsBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Beacon", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
    ],
    targets: [
        .executableTarget(
            name: "SignalsBenchmarks",
            dependencies: [
                .product(name: "Signals", package: "Beacon"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            path: "Benchmarks/SignalsBenchmarks",
            // The benchmark code itself builds in Swift 5 mode: package-benchmark's configuration
            // type is not Sendable, which Swift 6 rejects in global constants. Signals is built
            // with its own package's settings (Swift 6, warnings as errors).
            swiftSettings: [.swiftLanguageMode(.v5)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
