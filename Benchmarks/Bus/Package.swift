// swift-tools-version: 6.2
import PackageDescription

// Measures beacond the way ../../../shared/anchors/bus measures dbus-daemon, dbus-broker and Redis.
// Built and run by scripts/bus-bench.sh.
let package = Package(
    name: "BeaconBusBench",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Beacon", path: "../..")
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
        )
    ]
)
