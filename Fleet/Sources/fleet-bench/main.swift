import BeaconClient
import BeaconFleet
import BeaconProtocol
import EtcdAPI
import Foundation
import GRPCCore
import Signals
import Synchronization

// fleet-bench: a fleet Set on machine A until machine B's watcher has it, beside etcd's own put until a watch on
// another connection has it; then pipelined fleet Sets beside pipelined etcd puts of the same sizes. Run by
// Fleet/scripts/fleet-bench.sh, which starts the cluster and the machines.
//
//   fleet-bench A-ADDRESS B-ADDRESS ENDPOINTS [COUNT] [IN-FLIGHT]

// The same executor as beacon-fleet's, so that both clients below (beacond's and etcd's) run as beacon-fleet does.
_ = OneEventLoop.install()

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: fleet-bench A-ADDRESS B-ADDRESS ENDPOINTS [COUNT] [IN-FLIGHT]\n".utf8))
    exit(2)
}
let count = arguments.count > 4 ? Int(arguments[4]) ?? 2000 : 2000
let inFlight = arguments.count > 5 ? Int(arguments[5]) ?? 32 : 32
let configuration = try FleetConfiguration.load(
    arguments: ["fleet-bench", "--fleet-prefixes", "fleet", "--fleet-endpoints", arguments[3]],
    environment: ["HOME": "/nonexistent"])

/// Values a watcher received, by the number they carry.
final class Arrivals: Sendable {
    fileprivate let state = Mutex<
        (seen: [Int64: ContinuousClock.Instant], waiting: [Int64: CheckedContinuation<Void, Never>])
    >(
        ([:], [:]))

    func arrived(_ number: Int64) {
        let now = ContinuousClock.now
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.seen[number] = now
            return state.waiting.removeValue(forKey: number)
        }
        waiter?.resume()
    }

    func wait(for number: Int64) async -> ContinuousClock.Instant {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.seen[number] != nil { return true }
                state.waiting[number] = continuation
                return false
            }
            if done { continuation.resume() }
        }
        return state.withLock { $0.seen[number]! }
    }
}

extension Arrivals {
    /// Whether `number` arrives within `limit`.
    func arrives(_ number: Int64, within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if state.withLock({ $0.seen[number] != nil }) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }
}

/// Sends probes (-1, -2, …) until one arrives: a watch starts in the background, and what was written before it
/// began is not delivered.
func startWatch(
    _ what: String, _ arrivals: Arrivals, send: (Int64) async throws -> Void
) async throws {
    for probe in stride(from: Int64(-1), through: -50, by: -1) {
        try await send(probe)
        if await arrivals.arrives(probe, within: .milliseconds(300)) { return }
    }
    fatalError("\(what) never started")
}

func percentile(_ samples: [Duration], _ p: Double) -> Double {
    let sorted = samples.sorted()
    let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))
    let (seconds, attoseconds) = sorted[index].components
    return Double(seconds) * 1e6 + Double(attoseconds) / 1e12
}

func report(_ name: String, _ samples: [Duration]) {
    print(
        String(
            format: "%-28@ p50 %8.1f µs   p99 %8.1f µs   (n=%d)", name as NSString, percentile(samples, 0.5),
            percentile(samples, 0.99), samples.count))
}

let payload = JSONValue.string(String(repeating: "x", count: 64))

// Fleet: A's Set until B's watcher has it.
let clientA = try await BeaconClient.connect(to: try BeaconAddress(arguments[1]))
let clientB = try await BeaconClient.connect(to: try BeaconAddress(arguments[2]))
let fleetArrivals = Arrivals()
let watch = clientB.propertyChanges(["fleet.bench.latency"]).observeNext { change in
    if case .object(let members)? = change.value, let number = members["n"]?.intValue {
        fleetArrivals.arrived(number)
    }
}
try await startWatch("the watch on B", fleetArrivals) { probe in
    try await clientA.set("fleet.bench.latency", to: .object(["n": .int(probe), "p": payload]))
}

// etcd: a put on one connection until a watch on another has it.
let writer = try EtcdConnection(configuration: configuration)
let reader = try EtcdConnection(configuration: configuration)
let writerRun = Task { try await writer.run() }
let readerRun = Task { try await reader.run() }
let etcdArrivals = Arrivals()
let key = Array("/bench/latency".utf8)
let watching = Task {
    try await reader.watch(from: key, to: EtcdConnection.prefixEnd(key), revision: 0) { response in
        for event in response.events {
            if case .object(let members) = try JSONValue(parsing: [UInt8](event.kv.value)),
                let number = members["n"]?.intValue
            {
                etcdArrivals.arrived(number)
            }
        }
        return true
    }
}
func put(_ connection: EtcdConnection, _ key: [UInt8], _ value: JSONValue) async throws {
    var bytes: [UInt8] = []
    value.encode(into: &bytes)
    var put = Etcdserverpb_PutRequest()
    put.key = Data(key)
    put.value = Data(bytes)
    var transaction = Etcdserverpb_TxnRequest()
    transaction.success = [Etcdserverpb_RequestOp.with { $0.request = .requestPut(put) }]
    // Retried on a dropped stream, as beacon-fleet's writes are (and etcd's own Go client's).
    for attempt in 1... {
        do {
            _ = try await connection.txn(transaction, timeout: .seconds(5))
            return
        } catch let error as RPCError where error.code == .unavailable && attempt < 5 {
            retries.withLock {
                $0.count += 1
                if $0.first == nil { $0.first = "\(error)" }
            }
        }
    }
}
let retries = Mutex((count: 0, first: String?.none))
try await startWatch("the etcd watch", etcdArrivals) { probe in
    try await put(writer, key, .object(["n": .int(probe), "p": payload]))
}

// The samples alternate, one fleet Set, one etcd put, so that both meet the same moments of the machine.
var fleetSamples: [Duration] = []
var etcdSamples: [Duration] = []
for index in 0..<Int64(count / 4) {
    var start = ContinuousClock.now
    try await clientA.set("fleet.bench.latency", to: .object(["n": .int(index), "p": payload]))
    fleetSamples.append(await fleetArrivals.wait(for: index) - start)
    start = ContinuousClock.now
    try await put(writer, key, .object(["n": .int(index), "p": payload]))
    etcdSamples.append(await etcdArrivals.wait(for: index) - start)
}
watch.dispose()
watching.cancel()

print("Set on one machine → watcher on another (64-byte values, sequential):")
report("fleet (beacon-fleet)", fleetSamples)
report("etcd (put → watch, gRPC)", etcdSamples)
print(
    String(
        format: "ratio p50 %.2f×, p99 %.2f×", percentile(fleetSamples, 0.5) / percentile(etcdSamples, 0.5),
        percentile(fleetSamples, 0.99) / percentile(etcdSamples, 0.99)))

// Pipelined: `inFlight` writers, each on its own connection for the fleet (a connection's calls are answered in
// order) and on one shared HTTP/2 connection for etcd.
var clients: [BeaconClient] = []
for _ in 0..<inFlight { clients.append(try await BeaconClient.connect(to: try BeaconAddress(arguments[1]))) }
let perWriter = count / inFlight
var start = ContinuousClock.now
try await withThrowingTaskGroup(of: Void.self) { group in
    for (index, client) in clients.enumerated() {
        group.addTask {
            for step in 0..<perWriter {
                try await client.set("fleet.bench.w\(index)", to: .object(["n": .int(Int64(step)), "p": payload]))
            }
        }
    }
    try await group.waitForAll()
}
let fleetElapsed = ContinuousClock.now - start
start = ContinuousClock.now
try await withThrowingTaskGroup(of: Void.self) { group in
    for index in 0..<inFlight {
        group.addTask {
            for step in 0..<perWriter {
                try await put(writer, Array("/bench/w\(index)".utf8), .object(["n": .int(Int64(step)), "p": payload]))
            }
        }
    }
    try await group.waitForAll()
}
let etcdElapsed = ContinuousClock.now - start
func rate(_ elapsed: Duration) -> Double {
    let (seconds, attoseconds) = elapsed.components
    return Double(perWriter * inFlight) / (Double(seconds) + Double(attoseconds) / 1e18)
}
print("Pipelined writes, \(inFlight) in flight, \(perWriter * inFlight) in all:")
print(String(format: "%-28@ %8.0f writes/s", "fleet Sets" as NSString, rate(fleetElapsed)))
print(String(format: "%-28@ %8.0f writes/s", "etcd puts (gRPC)" as NSString, rate(etcdElapsed)))
print(String(format: "ratio %.2f×", rate(fleetElapsed) / rate(etcdElapsed)))
let (retried, firstError) = retries.withLock { $0 }
FileHandle.standardError.write(
    Data("etcd puts retried after a dropped stream: \(retried) (the first: \(firstError ?? "none"))\n".utf8))
for client in clients { client.close() }
clientA.close()
clientB.close()
writer.close()
reader.close()
writerRun.cancel()
readerRun.cancel()
