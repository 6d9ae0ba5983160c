import BeaconClient
import BeaconFleet
import BeaconProtocol
import Foundation
import Logging

// beacon-fleet: mirrors the subtrees named in fleet.prefixes between beacond and etcd (see Fleet/README.md).
let arguments = CommandLine.arguments
if arguments.contains("--help") || arguments.contains("-h") {
    print(
        """
        usage: beacon-fleet [--fleet-prefixes ROOT]... [--fleet-endpoints HOST:PORT,...] [--fleet-NAME VALUE]...

        Mirrors the subtrees named in fleet.prefixes between the user's beacond and an etcd v3 cluster.
        Configured by the fleet section of beacond's configuration file, BEACON_FLEET_* variables and
        --fleet-* flags; see beacon-fleet(1).
        """)
    exit(0)
}
if arguments.contains("--version") {
    print("beacon-fleet \(BeaconVersion.current)")
    exit(0)
}
let environment = ProcessInfo.processInfo.environment
let configuration: FleetConfiguration
do {
    configuration = try FleetConfiguration.load(arguments: arguments, environment: environment)
} catch {
    FileHandle.standardError.write(Data("beacon-fleet: \(error)\n".utf8))
    exit(2)
}
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = Logger.Level(rawValue: configuration.logLevel) ?? .info
    return handler
}
let logger = Logger(label: "beacon-fleet")

if !OneEventLoop.install() {
    logger.notice("Swift concurrency keeps its own executor; tasks and I/O run on separate threads")
}

signal(SIGTERM, SIG_IGN)
// A closed standard error (`beacon-fleet 2>&1 | head`) loses log lines; it does not end the process.
signal(SIGPIPE, SIG_IGN)
signal(SIGINT, SIG_IGN)
let main = Task.detached {
    do {
        let client = try await BeaconClient.connect(to: try BeaconAddress(configuration.address))
        let bridge = try FleetBridge(configuration: configuration, client: client, logger: logger)
        logger.info(
            "mirroring to etcd",
            metadata: [
                "subtrees": "\(configuration.prefixes.map { $0 + ".**" })",
                "endpoints": "\(configuration.endpoints)", "machine": "\(configuration.machine)",
            ])
        try await bridge.run()
        client.close()
    } catch {
        logger.critical("cannot run: \(error)")
        exit(1)
    }
}
var sources: [any DispatchSourceSignal] = []
for number in [SIGTERM, SIGINT] {
    let source = DispatchSource.makeSignalSource(signal: number)
    source.setEventHandler { main.cancel() }
    source.resume()
    sources.append(source)
}
_ = await main.result
