// swift-tools-version: 6.2
import PackageDescription

// Measures beacond the way ../Peers (Benchmarks/Peers) measures dbus-daemon, dbus-broker and Redis.
// Built and run by scripts/bus-bench.sh.
let package = Package(
    name: "BeaconBusBench",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Beacon", path: "../.."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "beacon-bus-bench",
            dependencies: [
                .product(name: "BeaconProtocol", package: "Beacon"),
                .product(name: "BeaconClient", package: "Beacon"),
                .product(name: "Signals", package: "Beacon"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
        // Post -> observer through DistributedNotificationCenter beside BeaconClient's own (issue figures).
        .executableTarget(
            name: "dnc-bench",
            dependencies: [
                .product(name: "BeaconClient", package: "Beacon"),
                .product(name: "BeaconFoundation", package: "Beacon"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
        // SwiftNIO's own cost per message: a server that answers every frame with the same reply
        // (scripts/get-floor.sh).
        .executableTarget(
            name: "nio-floor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
        // The same server on Beacon's own event loop (scripts/get-floor.sh).
        .executableTarget(
            name: "loop-floor",
            dependencies: [.product(name: "BeaconEventLoop", package: "Beacon")],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ]
)
