// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error)
]

let package = Package(
    name: "Beacon",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Signals", targets: ["Signals"]),
        .library(name: "SignalsFoundation", targets: ["SignalsFoundation"]),
        .library(name: "Varlink", targets: ["Varlink"]),
        .library(name: "VarlinkClient", targets: ["VarlinkClient"]),
        .library(name: "VarlinkServer", targets: ["VarlinkServer"]),
        .executable(name: "varlink-swift-generator", targets: ["varlink-swift-generator"]),
        .plugin(name: "VarlinkGenerator", targets: ["VarlinkGenerator"]),
        .library(name: "BeaconProtocol", targets: ["BeaconProtocol"]),
        .library(name: "BeaconProtocolFoundation", targets: ["BeaconProtocolFoundation"]),
        .library(name: "BeaconBlockingClient", targets: ["BeaconBlockingClient"]),
        .library(name: "BeaconClient", targets: ["BeaconClient"]),
        .library(name: "BeaconFoundation", targets: ["BeaconFoundation"]),
        .library(name: "BeaconConfiguration", targets: ["BeaconConfiguration"]),
        .library(name: "BeaconTestSupport", targets: ["BeaconTestSupport"]),
        .library(name: "BeaconEventLoop", targets: ["BeaconEventLoop"]),
        .executable(name: "beacond", targets: ["beacond"]),
        .executable(name: "beaconctl", targets: ["beaconctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        // In-process reactive core. No package dependencies.
        .target(name: "Signals", swiftSettings: strict),
        // NotificationCenter as signals: the only part of Signals that needs Foundation.
        .target(name: "SignalsFoundation", dependencies: ["Signals"], swiftSettings: strict),

        // varlink for any service: framing, messages, JSON values, the interface description language and its
        // validation, errors. No I/O, no Foundation.
        .target(name: "Varlink", swiftSettings: strict),
        // Swift from `.varlink` files: types, errors, a typed client and a service protocol with its dispatch. The
        // build plugin VarlinkGenerator runs varlink-swift-generator on every `.varlink` file of a target.
        .target(name: "VarlinkCodeGeneration", dependencies: ["Varlink"], swiftSettings: strict),
        .executableTarget(
            name: "varlink-swift-generator", dependencies: ["Varlink", "VarlinkCodeGeneration"], swiftSettings: strict),
        .plugin(name: "VarlinkGenerator", capability: .buildTool(), dependencies: ["varlink-swift-generator"]),
        // Beacon's side of the protocol: key paths and patterns, settings files, Beacon's interface texts. No I/O.
        // Its interfaces are the `.varlink` files of Interfaces/, from which VarlinkGenerator writes their Swift.
        .target(
            name: "BeaconProtocol", dependencies: ["Varlink"], exclude: ["varlink-generator.json"],
            swiftSettings: strict, plugins: ["VarlinkGenerator"]),
        // Any Codable value as a JSON value, through JSONEncoder and JSONDecoder: the only part of BeaconProtocol that
        // needs Foundation.
        .target(name: "BeaconProtocolFoundation", dependencies: ["BeaconProtocol"], swiftSettings: strict),

        // The configuration file, `BEACON_*` variables and flags, and the default paths: shared by beacond and
        // beacon-fleet.
        .target(name: "BeaconConfiguration", dependencies: ["BeaconProtocol"], swiftSettings: strict),

        // sd-bus's declarations (libsystemd-dev). Nothing links libsystemd: CSystemdShims opens it when the
        // lifecycle bridge first calls sd-bus.
        .systemLibrary(
            name: "CSystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // sd-bus loaded on demand, the service manager's notification and journal sockets, signalfd.
        .target(name: "CSystemdShims", dependencies: ["CSystemd"], linkerSettings: [.linkedLibrary("dl")]),
        .target(
            name: "BeaconSystemd",
            dependencies: [
                "BeaconEventLoop", "CSystemd", "CSystemdShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),

        // SQLite, found with pkg-config.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // glibc's malloc tuning (one arena and fixed thresholds from the start, and returning free memory), and the
        // release of the code that start-up alone ran.
        .target(name: "CMalloc"),
        .target(name: "CConcurrencyHook"),
        // An event loop on epoll that reports readiness to any handler, not only to SwiftNIO's channels, and is a
        // SwiftNIO EventLoop and a Swift concurrency executor besides.
        .target(name: "CEpoll"),
        .target(
            name: "BeaconEventLoop",
            dependencies: [
                "CEpoll",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // A varlink server of any service on a Unix socket, on one BeaconEventLoop: admission by uid and limits,
        // the reading of calls, the writing of replies at the end of each tick, org.varlink.service.
        .target(
            name: "VarlinkServer",
            dependencies: [
                "BeaconEventLoop", "CEpoll", "Varlink",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "BeaconDaemon",
            dependencies: [
                "BeaconConfiguration", "BeaconEventLoop", "BeaconProtocol", "BeaconSystemd", "CEpoll", "CMalloc",
                "CSQLite", "CSystemdShims", "VarlinkServer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "beacond",
            dependencies: [
                "BeaconDaemon", "BeaconProtocol", "BeaconSystemd", "CConcurrencyHook", "CMalloc",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),

        // A varlink client of any service on a Unix socket: a blocking connection of plain POSIX calls, and an async
        // client over it for generated code. No NIO, no Foundation.
        .target(name: "VarlinkClient", dependencies: ["Varlink"], swiftSettings: strict),
        // The daemon's address and the blocking connection to it: no NIO, no Foundation.
        .target(
            name: "BeaconBlockingClient", dependencies: ["BeaconProtocol", "VarlinkClient"], swiftSettings: strict),
        .target(
            name: "BeaconClient",
            dependencies: [
                "BeaconBlockingClient", "BeaconEventLoop", "BeaconProtocol", "BeaconProtocolFoundation", "CEpoll",
                "Signals",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict,
            // The typed calls of Beacon's interfaces, as extensions of BeaconProtocol's names.
            plugins: [.plugin(name: "VarlinkGenerator")]
        ),
        // Foundation's types for what BeaconClient gives as plain values (a time zone's identifier as `TimeZone`):
        // kept apart so that a client that does not ask for them does not link Foundation's ICU.
        .target(name: "BeaconFoundation", dependencies: ["BeaconClient", "Signals"], swiftSettings: strict),
        .executableTarget(
            name: "beaconctl",
            dependencies: [
                "BeaconBlockingClient", "BeaconProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),

        // The parsers that clients and files reach, for libFuzzer (`make fuzz`, built with -D FUZZING); without
        // it, a replay of the checked-in corpus.
        .executableTarget(
            name: "beacon-fuzz",
            dependencies: ["BeaconProtocol", "BeaconDaemon"],
            path: "Fuzz/beacon-fuzz",
            swiftSettings: strict
        ),

        .testTarget(
            name: "BeaconEventLoopTests",
            dependencies: ["BeaconEventLoop", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        .testTarget(name: "SignalsTests", dependencies: ["Signals", "SignalsFoundation"], swiftSettings: strict),
        .testTarget(
            name: "BeaconProtocolTests",
            dependencies: ["BeaconProtocol", "BeaconProtocolFoundation", "BeaconTestSupport", "Varlink"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BeaconSystemdTests",
            dependencies: [
                "BeaconSystemd", "BeaconTestSupport", "CSystemdShims",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Starting the real daemon and waiting for its READY=1, for the test targets that need it.
        .target(
            name: "BeaconTestSupport",
            dependencies: [],
            path: "Tests/BeaconTestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "BeaconDaemonTests",
            dependencies: [
                "BeaconConfiguration", "BeaconDaemon", "BeaconProtocol", "BeaconTestSupport", "VarlinkServer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BeaconClientTests",
            dependencies: ["BeaconClient", "BeaconFoundation", "BeaconProtocol", "BeaconTestSupport", "Signals"],
            swiftSettings: strict
        ),
        // The certification of the generated code: Python's varlink client against a generated service on the
        // daemon's server, and a generated client against Python's server.
        .testTarget(
            name: "VarlinkServerTests",
            dependencies: [
                "BeaconEventLoop", "VarlinkServer", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VarlinkTests",
            dependencies: [
                "BeaconClient", "BeaconDaemon", "BeaconTestSupport", "Varlink", "VarlinkClient", "VarlinkServer",
                "VarlinkCodeGeneration",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict,
            plugins: ["VarlinkGenerator"]
        ),
        .testTarget(
            name: "beaconctlTests",
            dependencies: ["BeaconClient", "BeaconProtocol", "BeaconTestSupport"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
