// swift-tools-version: 6.2
import PackageDescription

// org.varlink.certification, both sides, from its `.varlink` file alone: the VarlinkGenerator plugin writes the
// types, the client and the service protocol; the program serves the interface on VarlinkServer and calls it through
// VarlinkClient. It uses the varlink products of this repository only. `make test` builds it and runs it against
// the Python `varlink` package's certification, both ways.
let package = Package(
    name: "VarlinkCertification",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Beacon", path: "../.."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "varlink-certification",
            dependencies: [
                .product(name: "Varlink", package: "Beacon"),
                .product(name: "VarlinkClient", package: "Beacon"),
                .product(name: "VarlinkServer", package: "Beacon"),
                // The server's event loop is a SwiftNIO EventLoop: Test10's replies go out one per tick.
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)],
            plugins: [.plugin(name: "VarlinkGenerator", package: "Beacon")]
        )
    ],
    swiftLanguageModes: [.v6]
)
