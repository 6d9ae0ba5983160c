// swift-tools-version: 6.2
import PackageDescription

// A small app built on BeaconClient: a settings mirror (see README.md). `make test` builds it.
let package = Package(
    name: "SettingsMirror",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Beacon", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "SettingsMirror",
            dependencies: [
                .product(name: "BeaconClient", package: "Beacon"),
                .product(name: "Signals", package: "Beacon"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        )
    ],
    swiftLanguageModes: [.v6]
)
