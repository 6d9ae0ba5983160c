import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import EtcdAPI
import FleetHistory
import Foundation
import Logging
import Signals
import Synchronization
import Testing

@testable import BeaconFleet

/// Three machines on a three-member etcd cluster whose members live in network namespaces of the test's own,
/// under writers, compare-and-sets and linearizable reads, while faults are injected: members killed, paused and
/// cut off (both ways and one way), the leader paused and isolated, beacon-fleet and beacond killed, and a
/// compaction while a machine is away. Every operation, every change in etcd and every watcher's event is
/// recorded, and the history is checked (FleetHistory): linearizable per key, nothing applied twice, every
/// acknowledged write in etcd, no refused one, every watcher in etcd's order.
///
/// `make test` runs it for about a minute; `make test-fleet-long` sets `BEACON_FLEET_FAULT_SECONDS` (600). With
/// `BEACON_FLEET_HISTORY_OUT`, each run keeps its history there (`history-faults.jsonl`, `history-sustained.jsonl`)
/// for `fleet-history-check`.
@Suite("beacon-fleet's history under faults", .serialized)
struct FleetFaultTests {
    @Test(
        "under kills, pauses and partitions every write is applied at most once and every answer is the truth",
        .timeLimit(.minutes(20)))
    func faults() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = Int(environment["BEACON_FLEET_FAULT_SECONDS"] ?? "") ?? 60
        let run = try await FaultRun(machines: 3)
        let report = try await run.run(for: .seconds(seconds), faults: true)
        #expect(report.anomalies.isEmpty, "\(report.table)")
        // The run did something: writes were acknowledged on every machine, and faults were injected.
        #expect((report.operationCounts["set"]?[.ok] ?? 0) > 50)
        #expect((report.operationCounts["cas"]?[.ok] ?? 0) > 5)
        #expect(run.faultsInjected.count >= 8, "\(run.faultsInjected)")
    }

    @Test(
        "sustained writes on a healthy cluster: no write refused as unavailable, no connection closed under them",
        .timeLimit(.minutes(20)))
    func sustained() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = Int(environment["BEACON_FLEET_SUSTAINED_SECONDS"] ?? "") ?? 20
        let run = try await FaultRun(machines: 3)
        let report = try await run.run(for: .seconds(seconds), faults: false)
        #expect(report.anomalies.isEmpty, "\(report.table)")
        let logs = run.machines.map(\.fleetLog).joined()
        let unavailable = logs.components(separatedBy: "etcd is unavailable").count - 1
        let drops = logs.components(separatedBy: "unexpectedly closed").count - 1
        print("sustained writes for \(seconds) s: \(unavailable) times unavailable, \(drops) dropped streams")
        #expect(unavailable == 0)
        #expect(drops == 0)
        #expect((report.operationCounts["set"]?[.fail] ?? 0) == 0)
    }
}

/// One recorded run: the cluster, the machines, the clients and the recorder.
final class FaultRun: @unchecked Sendable {
    let cluster: EtcdCluster
    let machines: [Machine]
    let recorder = HistoryRecorder()
    let keys = (0..<6).map { "fleet.k\($0)" }
    /// The test's own etcd client: etcd's history and linearizable reads.
    let etcd: EtcdConnection
    let etcdRun: Task<Void, any Error>
    let stopping = Atomic<Bool>(false)
    private let injected = Mutex<[String]>([])
    var faultsInjected: [String] { injected.withLock { $0 } }
    private let lastRevision = Atomic<Int64>(0)
    private let nextValue = Atomic<Int>(0)

    init(machines count: Int) async throws {
        cluster = try EtcdCluster(netns: true)
        var machines: [Machine] = []
        for index in 0..<count {
            machines.append(try Machine("m\(index)", endpoints: cluster.endpoints, leaseTTL: 3))
        }
        self.machines = machines
        let configuration = try FleetConfiguration.load(
            arguments: ["test"],
            environment: [
                "HOME": machines[0].daemon.directory, "BEACON_FLEET_PREFIXES": "fleet",
                "BEACON_FLEET_ENDPOINTS": cluster.endpoints, "BEACON_FLEET_REQUEST_TIMEOUT_MS": "1000",
            ])
        let etcd = try EtcdConnection(configuration: configuration)
        self.etcd = etcd
        etcdRun = Task { try await etcd.run() }
    }

    deinit {
        etcd.close()
        etcdRun.cancel()
    }

    func note(_ fault: String) {
        injected.withLock { $0.append(fault) }
    }

    /// A value never written before.
    func freshValue(_ process: Int) -> String {
        "p\(process)-\(nextValue.add(1, ordering: .relaxed).newValue)"
    }

    /// Runs the workload for `duration`, with faults when asked, then lets the fleet settle and checks the history.
    func run(for duration: Duration, faults: Bool) async throws -> HistoryReport {
        for machine in machines {
            let client = try await machine.client()
            try await machine.waitUntilAvailable(client)
            client.close()
        }
        let history = Task { try await self.followEtcd() }
        // Whatever happens, the tasks end, so that nothing keeps the cluster (and its namespaces) alive.
        defer {
            history.cancel()
            stopping.store(true, ordering: .relaxed)
        }
        var observers: [Observer] = []
        for machine in machines { observers.append(try await Observer.start(machine, recorder: recorder)) }
        let workers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var process = 0
                for machine in machines {
                    for _ in 0..<2 {
                        let number = process
                        group.addTask { try await self.write(as: number, on: machine) }
                        process += 1
                    }
                }
                group.addTask { await self.read(as: 100) }
                try await group.waitForAll()
            }
        }
        let clock = ContinuousClock()
        let end = clock.now + duration
        if faults {
            var round = 0
            while clock.now < end {
                try await injectFault(round, observers: &observers)
                round += 1
            }
        } else {
            try await Task.sleep(until: end)
        }
        try cluster.heal()
        stopping.store(true, ordering: .relaxed)
        try await workers.value
        try await settle()
        history.cancel()
        for observer in observers { observer.stop() }
        let recorded = recorder.history
        if let directory = ProcessInfo.processInfo.environment["BEACON_FLEET_HISTORY_OUT"] {
            // One file per run: `make test-fleet` runs both tests with the same directory.
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try recorded.write(to: directory + (faults ? "/history-faults.jsonl" : "/history-sustained.jsonl"))
        }
        let report = HistoryReport(history: recorded)
        print(report.table)
        print("faults injected: \(faultsInjected.joined(separator: ", "))")
        return report
    }

    // MARK: The workload

    /// One client of one machine, making one call at a time: Sets, Unsets and compare-and-sets of a few keys.
    func write(as process: Int, on machine: Machine) async throws {
        let client = try await machine.client()
        var generator = SystemRandomNumberGenerator()
        while !stopping.load(ordering: .relaxed) {
            let key = keys.randomElement(using: &generator)!
            let dice = Int.random(in: 0..<100, using: &generator)
            do {
                if dice < 50 {
                    let value = freshValue(process)
                    let handle = recorder.invoke(process: process, key: key, .set(value))
                    recorder.complete(handle, await outcome { _ = try await client.set(key, to: .string(value)) })
                } else if dice < 62 {
                    let handle = recorder.invoke(process: process, key: key, .unset)
                    recorder.complete(handle, await outcome { _ = try await client.unset(key) })
                } else {
                    // Compare-and-set on what this machine shows now.
                    var version: Int64 = 0
                    var expected: String?
                    do {
                        let property = try await client.get(key)
                        version = property.version
                        expected = property.value.stringValue
                    } catch  where error.code == .keyNotFound {}
                    if dice < 67, expected != nil {
                        let handle = recorder.invoke(
                            process: process, key: key, .compareAndSet(expected: expected, value: nil))
                        recorder.complete(
                            handle, await outcome { _ = try await client.unset(key, ifVersion: version) })
                    } else {
                        let value = freshValue(process)
                        let handle = recorder.invoke(
                            process: process, key: key, .compareAndSet(expected: expected, value: value))
                        recorder.complete(
                            handle,
                            await outcome { _ = try await client.set(key, to: .string(value), ifVersion: version) })
                    }
                }
            } catch {
                // The Get of a compare-and-set failed (beacond restarting): nothing was written.
                try? await Task.sleep(for: .milliseconds(50))
            }
            try? await Task.sleep(for: .milliseconds(Int.random(in: 2...15, using: &generator)))
        }
        client.close()
    }

    /// What a write's answer says about it.
    func outcome(_ call: () async throws -> Void) async -> Outcome {
        do {
            try await call()
            return .ok
        } catch {
            switch (error as? BeaconError)?.code {
            // Refused, or never sent (the client knows it was not connected).
            case .versionMismatch, .keyNotFound, .providerUnavailable, .notConnected: return .fail
            default: return .unknown
            }
        }
    }

    /// Linearizable reads of the keys from etcd, as a client of etcd's own would make them.
    func read(as process: Int) async {
        while !stopping.load(ordering: .relaxed) {
            let key = keys.randomElement()!
            let handle = recorder.invoke(process: process, key: key, .read)
            do {
                let etcdKey = Array(("/beacon/" + key).utf8)
                let (kvs, _) = try await etcd.range(from: etcdKey, to: etcdKey + [0])
                recorder.complete(handle, .ok, readValue: try kvs.first.flatMap(Self.value))
            } catch {
                recorder.complete(handle, .fail)
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    static func value(_ kv: Mvccpb_KeyValue) throws -> String? {
        try FleetValue(decoding: kv.value).value.stringValue
    }

    // MARK: etcd's history

    /// Records every change of the mirrored range from the first revision on, resuming after the last one seen.
    func followEtcd() async throws {
        let prefix = Array("/beacon/".utf8)
        while !Task.isCancelled {
            do {
                try await etcd.watch(
                    from: prefix, to: FleetWriter.mirroredRangeEnd(prefix),
                    revision: lastRevision.load(ordering: .relaxed) + 1
                ) { response in
                    for event in response.events {
                        let key = String(decoding: event.kv.key.dropFirst(prefix.count), as: UTF8.self)
                        guard key.hasPrefix("fleet.") else {
                            self.lastRevision.store(event.kv.modRevision, ordering: .relaxed)
                            continue
                        }
                        let value = event.type == .delete ? nil : try? Self.value(event.kv)
                        self.recorder.recordChange(revision: event.kv.modRevision, key: key, value: value)
                        self.lastRevision.store(event.kv.modRevision, ordering: .relaxed)
                    }
                    return !Task.isCancelled
                }
            } catch {
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Waits until etcd's history is recorded up to its current revision and every machine holds etcd's values.
    func settle() async throws {
        // A marker in the mirrored range, outside the mirrored subtrees: once the recorder saw it, it has every
        // change before it. (etcd's current revision may belong to an id key, which the recorder never sees.)
        var marker = Etcdserverpb_TxnRequest()
        marker.success = [FleetWriter.put(Data("/beacon/end.marker".utf8), Data("{}".utf8), lease: 0)]
        let end = try await etcd.txn(marker, timeout: .seconds(10)).header.revision
        try await eventually("etcd's history is recorded to its end", within: .seconds(60)) {
            self.lastRevision.load(ordering: .relaxed) >= end
        }
        for machine in machines {
            let client = try await connectWhenBack(machine)
            try await machine.waitUntilAvailable(client, within: .seconds(60))
            try await eventually("\(machine.name) holds etcd's values", within: .seconds(60)) {
                for key in self.keys {
                    let etcdKey = Array(("/beacon/" + key).utf8)
                    guard let (kvs, _) = try? await self.etcd.range(from: etcdKey, to: etcdKey + [0]) else {
                        return false
                    }
                    let inEtcd = try kvs.first.flatMap(Self.value)
                    let local: String?
                    do {
                        local = try await client.get(key).value.stringValue
                    } catch let error as BeaconError where error.code == .keyNotFound {
                        local = nil
                    }
                    if local != inEtcd { return false }
                }
                return true
            }
            client.close()
        }
    }

    // MARK: Faults

    /// One fault, held for a few seconds, then healed; they take turns.
    func injectFault(_ round: Int, observers: inout [Observer]) async throws {
        let hold = Duration.seconds(3)
        let member = Int.random(in: 1...3)
        switch round % 9 {
        case 0:
            note("member \(member) killed")
            try cluster.kill(member)
            try await Task.sleep(for: hold)
            try cluster.restart(member)
        case 1:
            let leader = try cluster.leader()
            note("leader \(leader) paused")
            try cluster.inject(.pause, leader)
            try await Task.sleep(for: hold)
            try cluster.inject(.resume, leader)
        case 2:
            let leader = try cluster.leader()
            note("leader \(leader) isolated from the other members")
            try cluster.inject(.isolate, leader)
            try await Task.sleep(for: hold)
            try cluster.heal()
        case 3:
            note("member \(member) cut one way")
            try cluster.inject(.oneway, member)
            try await Task.sleep(for: hold)
            try cluster.heal()
        case 4:
            note("member \(member) cut off")
            try cluster.inject(.cut, member)
            try await Task.sleep(for: hold)
            try cluster.heal()
        case 5:
            let machine = machines[round % machines.count]
            note("beacon-fleet of \(machine.name) killed")
            machine.killFleet()
            try await Task.sleep(for: .milliseconds(500))
            try machine.startFleet()
        case 6:
            let index = round % machines.count
            let machine = machines[index]
            note("beacond of \(machine.name) killed")
            observers[index].stop()
            machine.daemon.kill()
            try await Task.sleep(for: .milliseconds(500))
            try machine.daemon.start()
            observers[index] = try await Observer.start(machine, recorder: recorder)
        case 7:
            let machine = machines[round % machines.count]
            note("\(machine.name) away during a compaction")
            machine.fleet?.signal(SIGSTOP)
            try await Task.sleep(for: .seconds(1))
            try cluster.compact()
            try await Task.sleep(for: .seconds(1))
            machine.fleet?.signal(SIGCONT)
        default:
            // A quiet spell, so that the fleet is seen to recover between faults.
            try await Task.sleep(for: hold)
        }
        try cluster.waitHealthy()
        try await Task.sleep(for: .seconds(1))
    }
}

/// A watcher of `fleet.**` on one machine, recording the events it receives under a name of its own.
final class Observer: Sendable {
    let client: BeaconClient
    let subscription: Mutex<(any Disposable)?>

    private init(client: BeaconClient, subscription: any Disposable) {
        self.client = client
        self.subscription = Mutex(subscription)
    }

    static func start(_ machine: Machine, recorder: HistoryRecorder) async throws -> Observer {
        let client = try await connectWhenBack(machine)
        let name = "\(machine.name)#\(UUID().uuidString.prefix(8))"
        let disposable = client.propertyChanges(["fleet.**"]).observeNext { change in
            recorder.recordWatchEvent(
                observer: name, key: change.key, value: change.deleted ? nil : change.value?.stringValue)
        }
        return Observer(client: client, subscription: disposable)
    }

    func stop() {
        subscription.withLock {
            $0?.dispose()
            $0 = nil
        }
        client.close()
    }
}

/// A connection to `machine`'s beacond, once it accepts one again (after a restart), within 30 s.
func connectWhenBack(_ machine: Machine) async throws -> BeaconClient {
    let deadline = ContinuousClock.now + .seconds(30)
    while true {
        if let client = try? await machine.client() { return client }
        guard ContinuousClock.now < deadline else { throw TestFailure("\(machine.name) did not come back") }
        try await Task.sleep(for: .milliseconds(50))
    }
}
