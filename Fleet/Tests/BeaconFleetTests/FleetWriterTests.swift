import EtcdAPI
import Foundation
import GRPCCore
import Logging
import Synchronization
import Testing

@testable import BeaconFleet

/// ``FleetWriter`` against an etcd of this process's own that applies transactions as etcd does, and injects what
/// a real cluster cannot be made to do on demand: apply a transaction and lose its response, or keep a request and
/// apply it late, after its retry was answered.
@Suite("the idempotent write path", .serialized)
struct FleetWriterTests {
    let key = Data("/beacon/fleet.mode".utf8)

    /// A writer; the time it is given matters only to the tests of what happens when it runs out.
    func writer(_ etcd: FakeEtcd, timeout: Duration = .seconds(30)) -> FleetWriter {
        FleetWriter(
            etcd: etcd, etcdPrefix: Array("/beacon/".utf8), machine: "m", requestTimeout: timeout,
            logger: Logger(label: "test"))
    }

    func put(_ value: String, _ conditions: [Etcdserverpb_Compare] = []) -> FleetWrite {
        FleetWrite(key: key, operation: .put(value: Data(value.utf8), lease: nil), conditions: conditions)
    }

    @Test(
        "a write applied whose response was lost is answered with the revision it was applied at, and not applied again"
    )
    func lostResponse() async {
        let etcd = FakeEtcd(faults: [.applyAndLoseResponse])
        let outcome = await writer(etcd).commit(put("eco"))
        #expect(outcome == .committed(revision: 2))
        #expect(etcd.puts(of: key) == ["eco"])
        #expect(etcd.value(of: key) == "eco")
    }

    @Test("a compare-and-set that won, whose response was lost, is told it won, not that it lost")
    func lostCompareAndSet() async {
        let etcd = FakeEtcd(faults: [])
        _ = await writer(etcd).commit(put("eco"))
        let revision = etcd.revision
        etcd.inject([.applyAndLoseResponse])
        let compare = FleetWriter.compare(key, .mod, .equal, .modRevision(revision))
        let outcome = await writer(etcd).commit(put("max", [compare]))
        #expect(outcome == .committed(revision: revision + 1))
        #expect(etcd.puts(of: key) == ["eco", "max"])
    }

    @Test("a first attempt applied late, after its retry was answered, changes nothing")
    func lateFirstAttempt() async {
        let etcd = FakeEtcd(faults: [.hold])
        let outcome = await writer(etcd).commit(put("eco"))
        guard case .committed(let revision) = outcome else {
            Issue.record("expected committed, got \(outcome)")
            return
        }
        // Another machine's write, acknowledged after this one.
        _ = await writer(etcd).commit(put("max"))
        etcd.applyHeld()
        #expect(etcd.puts(of: key) == ["eco", "max"])
        #expect(etcd.value(of: key) == "max")
        // The late attempt found its id taken, and wrote nothing.
        #expect(etcd.revision == revision + 1)
    }

    @Test("a write etcd never answered is given up: its attempts that arrive later cannot apply")
    func givenUp() async {
        let etcd = FakeEtcd(faults: [])
        etcd.holdWrites = true
        let outcome = await writer(etcd, timeout: .milliseconds(600)).commit(put("eco"))
        guard case .notApplied = outcome else {
            Issue.record("expected not applied, got \(outcome)")
            return
        }
        etcd.applyHeld()
        #expect(etcd.puts(of: key).isEmpty)
        #expect(etcd.value(of: key) == nil)
    }

    @Test("when neither the write nor the mark that gives it up is answered, the outcome is unknown")
    func unknown() async {
        let etcd = FakeEtcd(faults: [])
        etcd.holdEverything = true
        let outcome = await writer(etcd, timeout: .milliseconds(600)).commit(put("eco"))
        guard case .unknown = outcome else {
            Issue.record("expected unknown, got \(outcome)")
            return
        }
        // Applied late: the outcome was indeed open.
        etcd.applyHeld()
        #expect(etcd.puts(of: key) == ["eco"])
    }

    @Test("a write never sent is refused, not unknown")
    func neverSent() async {
        let etcd = FakeEtcd(faults: [])
        etcd.leaseGrantFails = true
        let outcome = await writer(etcd, timeout: .milliseconds(400)).commit(put("eco"))
        guard case .notApplied = outcome else {
            Issue.record("expected not applied, got \(outcome)")
            return
        }
        #expect(etcd.value(of: key) == nil)
    }

    @Test("a compare that fails is refused with the key's current value, also when only a retry learns it")
    func refused() async {
        let etcd = FakeEtcd(faults: [])
        _ = await writer(etcd).commit(put("eco"))
        etcd.inject([.applyAndLoseResponse])
        let stale = FleetWriter.compare(key, .mod, .equal, .modRevision(1))
        let outcome = await writer(etcd).commit(put("max", [stale]))
        guard case .refused(let current, _) = outcome else {
            Issue.record("expected refused, got \(outcome)")
            return
        }
        #expect(current.map { String(decoding: $0.value, as: UTF8.self) } == "eco")
        #expect(etcd.puts(of: key) == ["eco"])
    }

    @Test("a lease of ids that expired is taken anew")
    func expiredIdLease() async {
        let etcd = FakeEtcd(faults: [])
        let writer = writer(etcd)
        _ = await writer.commit(put("eco"))
        etcd.expireLeases()
        #expect(await writer.commit(put("max")) == .committed(revision: etcd.revision))
        #expect(etcd.value(of: key) == "max")
    }

    @Test("the ids lie outside the mirrored range")
    func idRange() {
        let prefix = Array("/beacon/".utf8)
        let end = FleetWriter.mirroredRangeEnd(prefix)
        let id = Data(prefix + Array("~writes/m/1".utf8))
        let highestKey = Data(prefix + Array("zzz.___.---.999".utf8))
        #expect(highestKey.lexicographicallyPrecedes(end))
        #expect(!id.lexicographicallyPrecedes(end))
    }
}

/// An etcd of the test's own: one revision counter, keys with their create and mod revisions, leases, and
/// transactions with compares and nested transactions, applied as etcd applies them; and faults to inject.
final class FakeEtcd: EtcdTransactions, @unchecked Sendable {
    enum Fault {
        /// Applies the request, and answers normally.
        case apply
        /// Applies the request, then fails as a dropped connection does.
        case applyAndLoseResponse
        /// Keeps the request to apply later (``applyHeld()``), and fails as a timeout does.
        case hold
    }

    struct Entry {
        var value: Data
        var createRevision: Int64
        var modRevision: Int64
        var version: Int64
        var lease: Int64
    }

    private let lock = NSLock()
    private var faults: [Fault]
    /// Once the faults given are used up: keep every write (but not the mark that gives one up), or everything.
    var holdWrites = false
    var holdEverything = false
    private var store: [Data: Entry] = [:]
    private var history: [(key: Data, value: Data?)] = []
    private var leases: Set<Int64> = []
    private var nextLease: Int64 = 100
    private var held: [Etcdserverpb_TxnRequest] = []
    var leaseGrantFails = false
    private(set) var revision: Int64 = 1

    init(faults: [Fault]) { self.faults = faults }

    func inject(_ more: [Fault]) { lock.withLock { faults = more } }

    func txn(_ request: Etcdserverpb_TxnRequest, timeout: Duration) async throws -> Etcdserverpb_TxnResponse {
        let fault: Fault = lock.withLock {
            if !faults.isEmpty { return faults.removeFirst() }
            if holdEverything { return .hold }
            if holdWrites, case .requestTxn? = request.success.first?.request { return .hold }
            return .apply
        }
        switch fault {
        case .apply:
            return try lock.withLock { try apply(request) }
        case .applyAndLoseResponse:
            _ = try lock.withLock { try apply(request) }
            throw RPCError(code: .unavailable, message: "Stream unexpectedly closed.")
        case .hold:
            lock.withLock { held.append(request) }
            try await Task.sleep(for: .milliseconds(5))
            throw RPCError(code: .deadlineExceeded, message: "Timed out waiting for a response.")
        }
    }

    func grantLease(ttl: Int) async throws -> Int64 {
        try lock.withLock {
            if leaseGrantFails { throw RPCError(code: .unavailable, message: "no connection") }
            nextLease += 1
            leases.insert(nextLease)
            return nextLease
        }
    }

    func applyHeld() {
        lock.withLock {
            for request in held { _ = try? apply(request) }
            held.removeAll()
        }
    }

    func expireLeases() { lock.withLock { leases.removeAll() } }

    func value(of key: Data) -> String? {
        lock.withLock { store[key].map { String(decoding: $0.value, as: UTF8.self) } }
    }

    /// The values put under `key`, in revision order.
    func puts(of key: Data) -> [String] {
        lock.withLock {
            history.filter { $0.key == key }.compactMap { $0.value.map { String(decoding: $0, as: UTF8.self) } }
        }
    }

    // MARK: etcd's semantics

    private func apply(_ request: Etcdserverpb_TxnRequest) throws -> Etcdserverpb_TxnResponse {
        // etcd checks the leases of the branch it takes before it applies any of it.
        try checkLeases(request)
        var wrote = false
        let response = evaluate(request, at: revision + 1, wrote: &wrote)
        if wrote { revision += 1 }
        var answer = response
        answer.header.revision = revision
        return answer
    }

    private func holds(_ compare: Etcdserverpb_Compare) -> Bool {
        let entry = store[compare.key]
        let actual: Int64
        let expected: Int64
        switch compare.targetUnion {
        case .createRevision(let value)?: (actual, expected) = (entry?.createRevision ?? 0, value)
        case .modRevision(let value)?: (actual, expected) = (entry?.modRevision ?? 0, value)
        case .version(let value)?: (actual, expected) = (entry?.version ?? 0, value)
        case .lease(let value)?: (actual, expected) = (entry?.lease ?? 0, value)
        case .value(let value)?:
            let stored = entry?.value ?? Data()
            return compare.result == .equal ? stored == value : stored != value
        case nil: return false
        }
        switch compare.result {
        case .equal: return actual == expected
        case .notEqual: return actual != expected
        case .greater: return actual > expected
        case .less: return actual < expected
        case .UNRECOGNIZED: return false
        }
    }

    private func checkLeases(_ request: Etcdserverpb_TxnRequest) throws {
        let branch = request.compare.allSatisfy(holds) ? request.success : request.failure
        for operation in branch {
            switch operation.request {
            case .requestPut(let put)? where put.lease != 0 && !leases.contains(put.lease):
                throw RPCError(code: .notFound, message: "etcdserver: requested lease not found")
            case .requestTxn(let inner)?: try checkLeases(inner)
            default: break
            }
        }
    }

    private func evaluate(
        _ request: Etcdserverpb_TxnRequest, at next: Int64, wrote: inout Bool
    ) -> Etcdserverpb_TxnResponse {
        var response = Etcdserverpb_TxnResponse()
        response.succeeded = request.compare.allSatisfy(holds)
        for operation in response.succeeded ? request.success : request.failure {
            var result = Etcdserverpb_ResponseOp()
            switch operation.request {
            case .requestPut(let put)?:
                let old = store[put.key]
                store[put.key] = Entry(
                    value: put.value, createRevision: old?.createRevision ?? next, modRevision: next,
                    version: (old?.version ?? 0) + 1, lease: put.lease)
                if !put.key.contains(UInt8(ascii: "~")) { history.append((put.key, put.value)) }
                wrote = true
                result.response = .responsePut(Etcdserverpb_PutResponse())
            case .requestDeleteRange(let delete)?:
                var deleted = Etcdserverpb_DeleteRangeResponse()
                if store.removeValue(forKey: delete.key) != nil {
                    deleted.deleted = 1
                    history.append((delete.key, nil))
                    wrote = true
                }
                result.response = .responseDeleteRange(deleted)
            case .requestRange(let range)?:
                var found = Etcdserverpb_RangeResponse()
                if let entry = store[range.key] {
                    found.kvs = [
                        Mvccpb_KeyValue.with {
                            $0.key = range.key
                            $0.value = entry.value
                            $0.createRevision = entry.createRevision
                            $0.modRevision = entry.modRevision
                            $0.version = entry.version
                            $0.lease = entry.lease
                        }
                    ]
                    found.count = 1
                }
                result.response = .responseRange(found)
            case .requestTxn(let inner)?:
                result.response = .responseTxn(evaluate(inner, at: next, wrote: &wrote))
            case nil:
                break
            }
            response.responses.append(result)
        }
        return response
    }
}
