import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Signals
import Synchronization
import Testing

/// The source tree: `Fleet/Tests/BeaconFleetTests/` is three levels below it.
let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

/// beacond and beaconctl come from the main package's build, unless `BEACOND_PATH` / `BEACONCTL_PATH` say
/// otherwise; beacon-fleet is built next to these tests.
func useMainPackageBuild() {
    for (variable, name) in [("BEACOND_PATH", "beacond"), ("BEACONCTL_PATH", "beaconctl")] {
        setenv(variable, repository + "/.build/debug/" + name, 0)
    }
}

/// Runs `command` to its end; returns its standard output, and fails the test when it exits non-zero.
@discardableResult
func run(_ command: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String {
    let child = try ChildProcess(command, arguments, environment: environment, output: .capture, error: .capture)
    let (output, error) = child.readOutputAndError()
    let status = child.wait()
    guard status == 0 else {
        throw TestFailure(
            "\(command) \(arguments.joined(separator: " ")) exited with \(status): "
                + String(decoding: error, as: UTF8.self))
    }
    return String(decoding: output, as: UTF8.self)
}

/// A real three-member etcd cluster on 127.0.0.1, run by `Fleet/scripts/etcd-cluster.sh`, removed when released.
final class EtcdCluster: @unchecked Sendable {
    let directory: String
    let script = repository + "/Fleet/scripts/etcd-cluster.sh"
    private(set) var endpoints = ""

    /// `secure`: TLS with client certificates and etcd's authentication (the script's ETCD_SECURE; the files are
    /// in ``tls``).
    /// `netns`: each member in a network namespace of the script's own, so that links between members can be cut
    /// (the script's ETCD_NETNS).
    init(secure: Bool = false, netns: Bool = false) throws {
        directory = try makeTemporaryDirectory("etcd-cluster")
        var environment = ProcessInfo.processInfo.environment
        if secure { environment["ETCD_SECURE"] = "1" }
        if netns { environment["ETCD_NETNS"] = "1" }
        try run("/bin/bash", [script, "start", directory], environment: environment)
        endpoints = try run("/bin/bash", [script, "endpoints", directory]).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    deinit {
        _ = try? run("/bin/bash", [script, "stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The secure cluster's CA, the client certificate and key of the user kiosk, and its password file.
    var tls: String { directory + "/tls" }

    func endpoint(_ member: Int) throws -> String {
        try run("/bin/bash", [script, "endpoint", directory, "\(member)"]).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    func kill(_ member: Int) throws { try run("/bin/bash", [script, "kill", directory, "\(member)"]) }
    func restart(_ member: Int) throws { try run("/bin/bash", [script, "restart", directory, "\(member)"]) }
    func stop() throws { try run("/bin/bash", [script, "stop", directory]) }
    func compact() throws { try run("/bin/bash", [script, "compact", directory]) }

    /// The faults the script injects (its header says what each does to the packets).
    enum Fault: String, CaseIterable {
        case pause, resume, isolate, cut, oneway
    }

    func inject(_ fault: Fault, _ member: Int) throws {
        try run("/bin/bash", [script, fault.rawValue, directory, "\(member)"])
    }

    func waitHealthy() throws { try run("/bin/bash", [script, "wait-healthy", directory]) }

    /// Removes every isolate, cut and oneway.
    func heal() throws { try run("/bin/bash", [script, "heal", directory]) }

    /// The member that leads now.
    func leader() throws -> Int {
        let text = try run("/bin/bash", [script, "leader", directory]).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let number = Int(text) else { throw TestFailure("no leader: \(text)") }
        return number
    }

    /// etcd's own value of a Beacon key, as beacon-fleet stores it (`{"value":…,"origin":…}`), or `nil`.
    func stored(_ key: String) throws -> JSONValue? {
        let text = try run(
            "/usr/bin/etcdctl", ["--endpoints", endpoints, "get", "--print-value-only", "/beacon/" + key],
            environment: ["ETCDCTL_API": "3", "PATH": "/usr/bin:/bin"])
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !line.isEmpty else { return nil }
        return try JSONValue(parsing: line)["value"]
    }
}

/// One machine of the fleet: a real beacond that provides `fleet.**` through a real beacon-fleet.
final class Machine: @unchecked Sendable {
    let name: String
    let daemon: TestDaemon
    private let endpoints: String
    private let leaseTTL: Int
    /// More of beacon-fleet's settings, as `BEACON_FLEET_*` variables.
    private let settings: [String: String]
    private(set) var fleet: ChildProcess?

    init(_ name: String, endpoints: String, leaseTTL: Int = 2, settings: [String: String] = [:]) throws {
        useMainPackageBuild()
        self.name = name
        self.endpoints = endpoints
        self.leaseTTL = leaseTTL
        self.settings = settings
        daemon = try TestDaemon(arguments: ["--fleet-prefixes", "fleet"])
        try startFleet()
    }

    deinit {
        if let fleet, fleet.isRunning {
            fleet.signal(SIGKILL)
            fleet.wait()
        }
    }

    var fleetLog: String { (try? String(contentsOfFile: daemon.directory + "/fleet.log", encoding: .utf8)) ?? "" }

    func startFleet() throws {
        let environment = settings.merging([
            "PATH": "/usr/bin:/bin", "HOME": daemon.directory, "XDG_CONFIG_HOME": daemon.directory + "/config",
            "BEACON_ADDRESS": daemon.address, "BEACON_FLEET_PREFIXES": "fleet", "BEACON_FLEET_ENDPOINTS": endpoints,
            "BEACON_FLEET_MACHINE": name, "BEACON_FLEET_LEASE_TTL_SECONDS": "\(leaseTTL)",
            "BEACON_FLEET_REQUEST_TIMEOUT_MS": "3000", "BEACON_LOG_LEVEL": "debug",
        ]) { $1 }
        let path = try BuiltProducts.path("beacon-fleet", override: "BEACON_FLEET_PATH")
        let log = daemon.directory + "/fleet.log"
        fleet = try ChildProcess(path, [], environment: environment, output: .file(log), error: .file(log))
    }

    /// SIGTERM to beacon-fleet; its exit status, or `nil` when it did not end within 15 s.
    func terminateFleet() -> Int32? {
        guard let fleet, fleet.isRunning else { return nil }
        fleet.signal(SIGTERM)
        return fleet.wait(within: .seconds(15))
    }

    func killFleet() {
        guard let fleet, fleet.isRunning else { return }
        fleet.signal(SIGKILL)
        fleet.wait()
    }

    func client() async throws -> BeaconClient {
        try await BeaconClient.connect(to: try BeaconAddress(daemon.address))
    }

    /// The state of the `fleet.**` provider in Status.
    func fleetState(_ client: BeaconClient) async throws -> DaemonStatus.ProviderState? {
        try await client.daemonStatus().providers.first { $0.subtrees == ["fleet.**"] }
    }

    /// Waits until beacon-fleet has registered and reads etcd.
    func waitUntilAvailable(_ client: BeaconClient, within limit: Duration = .seconds(30)) async throws {
        try await eventually("\(name)'s fleet is available", within: limit) {
            try await self.fleetState(client)?.isAvailable == true
        }
    }

    func beaconctl(_ arguments: [String]) throws -> String {
        try run(
            try BuiltProducts.beaconctl(), arguments,
            environment: ["BEACON_ADDRESS": daemon.address, "PATH": "/usr/bin:/bin"])
    }
}

/// Polls `condition` until it holds, failing after `limit`: for states that nothing announces (a provider's
/// availability in Status). Changes of properties are waited for through ``ChangeLog``.
func eventually(
    _ what: String, within limit: Duration = .seconds(20), _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return }
        guard ContinuousClock.now < deadline else {
            throw TestFailure("timed out after \(limit) waiting until \(what)")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Every change a machine's watcher of `fleet.**` delivered, in order.
final class ChangeLog: Sendable {
    private let changes = Changes()
    private let subscription: Mutex<(any Disposable)?> = Mutex(nil)

    private init(_ client: BeaconClient) {
        let changes = self.changes
        let disposable = client.propertyChanges(["fleet.**", "probe.**"]).observeNext { change in
            changes.list.withLock { $0.append(change) }
        }
        subscription.withLock { $0 = disposable }
    }

    /// A log whose watch runs: a local probe key set after subscribing has come through it.
    static func start(_ client: BeaconClient) async throws -> ChangeLog {
        let log = ChangeLog(client)
        // The watch starts in the background: a probe set before it began is not delivered, so each probe gets
        // a moment, and a new one follows.
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let marker = JSONValue.string(UUID().uuidString)
            try await client.set("probe.ready", to: marker)
            if (try? await log.wait(for: "the probe", within: .milliseconds(250)) { $0.value == marker }) != nil {
                log.clear()
                return log
            }
        }
        throw TestFailure("the watch of fleet.** did not start within 20 s")
    }

    deinit { subscription.withLock { $0?.dispose() } }

    var all: [PropertyChange] { changes.list.withLock { $0 } }

    func clear() { changes.list.withLock { $0.removeAll() } }

    /// The first change that `matches` once it was delivered, waiting up to `limit`.
    @discardableResult
    func wait(
        for what: String, within limit: Duration = .seconds(20), _ matches: @escaping (PropertyChange) -> Bool
    ) async throws -> PropertyChange {
        let deadline = ContinuousClock.now + limit
        while true {
            if let found = changes.list.withLock({ $0.first(where: matches) }) { return found }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("timed out after \(limit) waiting for \(what); saw \(all.map(\.key))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// The changes a ``ChangeLog`` received.
private final class Changes: Sendable {
    let list = Mutex<[PropertyChange]>([])
}
