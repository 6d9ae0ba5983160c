// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error)
]

// beacon-fleet: the provider that mirrors configured subtrees to etcd (see README.md). Its own package, so that
// building beacond does not build gRPC.
let package = Package(
    name: "BeaconFleet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "beacon-fleet", targets: ["beacon-fleet"])
    ],
    dependencies: [
        .package(name: "Beacon", path: ".."),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
    ],
    targets: [
        // etcd's v3 API, generated from Protos/ by scripts/generate-protos.sh.
        .target(
            name: "EtcdAPI",
            dependencies: [
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .target(
            name: "BeaconFleet",
            dependencies: [
                "EtcdAPI",
                .product(name: "BeaconClient", package: "Beacon"),
                .product(name: "BeaconConfiguration", package: "Beacon"),
                .product(name: "BeaconProtocol", package: "Beacon"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
            swiftSettings: strict
        ),
        // Records and checks histories of fleet operations, etcd's revisions and watchers' events.
        .target(name: "FleetHistory", swiftSettings: strict),
        .executableTarget(name: "fleet-history-check", dependencies: ["FleetHistory"], swiftSettings: strict),
        .executableTarget(name: "beacon-fleet", dependencies: ["BeaconFleet"], swiftSettings: strict),
        // Fleet latency and throughput beside etcd's own (scripts/fleet-bench.sh).
        .executableTarget(
            name: "fleet-bench",
            dependencies: [
                "BeaconFleet", "EtcdAPI",
                .product(name: "BeaconClient", package: "Beacon"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "BeaconProtocol", package: "Beacon"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "FleetHistoryTests", dependencies: ["FleetHistory"], swiftSettings: strict),
        .testTarget(
            name: "BeaconFleetTests",
            dependencies: [
                "BeaconFleet", "FleetHistory",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "BeaconClient", package: "Beacon"),
                .product(name: "BeaconProtocol", package: "Beacon"),
                .product(name: "BeaconTestSupport", package: "Beacon"),
            ],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
