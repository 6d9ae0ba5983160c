// swift-tools-version: 6.2
import PackageDescription

// A program written against macOS's Foundation (DistributedNotificationCenter, UserDefaults suites,
// didChangeNotification) that builds on Linux with BeaconFoundation (see README.md). `make test` builds it and runs
// two copies against one beacond.
let package = Package(
    name: "FromTheMac",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Beacon", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "FromTheMac",
            dependencies: [
                .product(
                    name: "BeaconFoundation", package: "Beacon", condition: .when(platforms: [.linux]))
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        )
    ],
    swiftLanguageModes: [.v6]
)
