import EtcdAPI
import Foundation
import GRPCCore
import Logging
import Synchronization

/// The etcd calls a write needs; ``EtcdConnection`` makes them for real, and in-process tests give a double that
/// injects what a real cluster cannot be made to do on demand (apply a transaction, then lose its response).
package protocol EtcdTransactions: Sendable {
    /// One transaction, given `timeout` to complete.
    func txn(_ request: Etcdserverpb_TxnRequest, timeout: Duration) async throws -> Etcdserverpb_TxnResponse
    /// A new lease of `ttl` seconds, not kept alive.
    func grantLease(ttl: Int) async throws -> Int64
}

extension EtcdConnection: EtcdTransactions {}

/// One write of a key, as one etcd transaction.
package struct FleetWrite: Sendable {
    package enum Operation: Sendable {
        /// Put `value`, on `lease` when it is not `nil` (an ephemeral key).
        case put(value: Data, lease: Int64?)
        case delete
    }

    package var key: Data
    package var operation: Operation
    /// The conditions the caller set (compare-and-set; the owner of an ephemeral key); all must hold.
    package var conditions: [Etcdserverpb_Compare]

    package init(key: Data, operation: Operation, conditions: [Etcdserverpb_Compare] = []) {
        self.key = key
        self.operation = operation
        self.conditions = conditions
    }
}

/// What became of a write. The first three are definite; only ``unknown`` leaves the question open.
package enum WriteOutcome: Sendable, Equatable {
    /// etcd applied the write at `revision`, exactly once.
    case committed(revision: Int64)
    /// A condition did not hold, so nothing was written, and never will be. `current` is the key as etcd held it
    /// at `revision` (when known).
    case refused(current: Mvccpb_KeyValue?, revision: Int64)
    /// etcd did not apply the write, and never will: it did not answer in time, and the write's id was then
    /// marked as given up, or etcd refused the request itself (`reason` says which).
    case notApplied(reason: String)
    /// Neither an answer nor the mark that gives the write up reached etcd: it may have been applied, or may
    /// still be. A read of the key tells.
    case unknown(reason: String)
}

/// Carries out writes so that each is applied at most once, however often it is sent, and answers the truth.
///
/// Every write has an id, and the transaction that applies it also records the id under
/// `PREFIX~writes/ID` (a key no Beacon key can be: `~` sorts after every character a key may hold, and the
/// mirrored range ends before it):
///
///     If(create_revision(ids/ID) == 0)
///     Then(Txn(If(conditions…) Then(write, Put(ids/ID, "applied")) Else(Range(key), Put(ids/ID, "refused"))))
///     Else(Range(ids/ID), Range(key))
///
/// The first attempt etcd evaluates decides, and records what it decided; every later attempt of the same write
/// finds the id and reports that decision (an applied write's revision is the id key's `create_revision`, as
/// both were written by one transaction). So an attempt that timed out can be sent again, and a late one can no
/// longer apply after its retry did. When no attempt is answered in time, a last transaction marks the id
/// "given up" if it is still free: from then on no attempt of the write can apply, and the caller is told it was
/// not applied. Only when that mark cannot be placed either is the outcome unknown.
///
/// The id keys live on a lease of ``idLeaseTTL`` seconds, and a new lease is taken every ``idLeaseRotation``, so
/// that each id outlives every attempt of its write by minutes and then goes.
package final class FleetWriter: Sendable {
    let etcd: any EtcdTransactions
    /// `PREFIX~writes/`.
    let idPrefix: [UInt8]
    let machine: String
    let requestTimeout: Duration
    let logger: Logger

    static let idLeaseTTL = 120
    static let idLeaseRotation = Duration.seconds(30)

    private struct IdLease {
        var id: Int64
        var granted: ContinuousClock.Instant
    }

    private struct State {
        var idLease: IdLease?
        var grant: Task<IdLease, any Error>?
    }

    private let state = Mutex(State())

    package init(
        etcd: any EtcdTransactions, etcdPrefix: [UInt8], machine: String, requestTimeout: Duration, logger: Logger
    ) {
        self.etcd = etcd
        idPrefix = etcdPrefix + Array("~writes/".utf8)
        self.machine = machine
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    /// The end of the range of mirrored keys under `etcdPrefix`: the id keys lie beyond it.
    package static func mirroredRangeEnd(_ etcdPrefix: [UInt8]) -> [UInt8] { etcdPrefix + [UInt8(ascii: "~")] }

    /// A new write id: this machine's name and 64 random bits.
    func newID() -> String { "\(machine)/\(String(UInt64.random(in: 1...UInt64.max), radix: 16))" }

    /// Carries out `write` within the request timeout, and says what became of it.
    package func commit(_ write: FleetWrite) async -> WriteOutcome {
        await commit(write, id: newID())
    }

    package func commit(_ write: FleetWrite, id: String) async -> WriteOutcome {
        let idKey = Data(idPrefix + Array(id.utf8))
        let clock = ContinuousClock()
        let deadline = clock.now + requestTimeout
        // The last part of the time is kept for giving the write up.
        let giveUpTime = min(requestTimeout / 4, .seconds(1))
        let attemptTimeout = max(requestTimeout / 4, .milliseconds(500))
        // Whether an attempt failed after it may have reached etcd: then it may still apply, and only the id can
        // tell.
        var pending = false
        var renewedIdLease = false
        var lastError = "no attempt was made"
        while deadline - clock.now > giveUpTime {
            let remaining = deadline - clock.now - giveUpTime
            let lease: Int64
            do {
                lease = try await idLease()
            } catch {
                // Nothing of this attempt was sent.
                lastError = "no lease for the write's id: " + FleetBridge.describe(error)
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            do {
                let request = Self.transaction(write, idKey: idKey, idLease: lease)
                let response = try await etcd.txn(request, timeout: min(attemptTimeout, remaining))
                return Self.outcome(of: response)
            } catch let error as RPCError where Self.isTransient(error) {
                pending = true
                lastError = FleetBridge.describe(error)
                logger.debug("sending a write to etcd again", metadata: ["reason": "\(lastError)"])
                try? await Task.sleep(for: .milliseconds(20))
            } catch let error as RPCError where error.code == .notFound && !renewedIdLease {
                // etcd found a lease gone while applying, and wrote nothing. The ids' lease is taken anew once; an
                // ephemeral key's lease that is gone fails the write below.
                lastError = FleetBridge.describe(error)
                renewedIdLease = true
                forgetIdLease()
            } catch {
                // etcd refused the request itself (too large, not permitted, a lease gone): this attempt applied
                // nothing.
                lastError = FleetBridge.describe(error)
                if !pending { return .notApplied(reason: lastError) }
                break
            }
        }
        if !pending { return .notApplied(reason: lastError) }
        return await giveUp(idKey: idKey, key: write.key, until: deadline, lastError: lastError)
    }

    /// Marks the id as given up unless an attempt took it first, and says which.
    private func giveUp(idKey: Data, key: Data, until deadline: ContinuousClock.Instant, lastError: String) async
        -> WriteOutcome
    {
        let clock = ContinuousClock()
        var error = lastError
        repeat {
            do {
                let lease = try await idLease()
                var request = Etcdserverpb_TxnRequest()
                request.compare = [Self.compare(idKey, .create, .equal, .createRevision(0))]
                request.success = [Self.put(idKey, Self.givenUp, lease: lease)]
                request.failure = [Self.range(idKey), Self.range(key)]
                let response = try await etcd.txn(request, timeout: max(deadline - clock.now, .milliseconds(100)))
                if response.succeeded {
                    return .notApplied(reason: "etcd did not answer in time (\(error)); the write was not applied")
                }
                return Self.recorded(response)
            } catch let failure {
                error = FleetBridge.describe(failure)
                try? await Task.sleep(for: .milliseconds(20))
            }
        } while deadline > clock.now
        return .unknown(reason: "etcd did not answer in time, and may still apply the write: \(error)")
    }

    static let applied = Data("applied".utf8)
    static let refused = Data("refused".utf8)
    static let givenUp = Data("given up".utf8)

    /// The transaction of `write` under id key `idKey` (the type's comment shows it).
    static func transaction(_ write: FleetWrite, idKey: Data, idLease: Int64) -> Etcdserverpb_TxnRequest {
        var operation = Etcdserverpb_RequestOp()
        switch write.operation {
        case .put(let value, let lease):
            var put = Etcdserverpb_PutRequest()
            put.key = write.key
            put.value = value
            if let lease { put.lease = lease }
            operation.request = .requestPut(put)
        case .delete:
            var delete = Etcdserverpb_DeleteRangeRequest()
            delete.key = write.key
            operation.request = .requestDeleteRange(delete)
        }
        var inner = Etcdserverpb_TxnRequest()
        inner.compare = write.conditions
        inner.success = [operation, put(idKey, applied, lease: idLease)]
        inner.failure = [range(write.key), put(idKey, refused, lease: idLease)]
        var outer = Etcdserverpb_TxnRequest()
        outer.compare = [compare(idKey, .create, .equal, .createRevision(0))]
        outer.success = [Etcdserverpb_RequestOp.with { $0.request = .requestTxn(inner) }]
        outer.failure = [range(idKey), range(write.key)]
        return outer
    }

    /// What the answer to ``transaction(_:idKey:idLease:)`` says.
    static func outcome(of response: Etcdserverpb_TxnResponse) -> WriteOutcome {
        guard response.succeeded else { return recorded(response) }
        let inner = response.responses.first?.responseTxn ?? Etcdserverpb_TxnResponse()
        if inner.succeeded { return .committed(revision: response.header.revision) }
        return .refused(current: inner.responses.first?.responseRange.kvs.first, revision: response.header.revision)
    }

    /// What an earlier attempt recorded under the id, from a response whose first part reads the id key and whose
    /// second reads the key.
    static func recorded(_ response: Etcdserverpb_TxnResponse) -> WriteOutcome {
        let current = response.responses.count > 1 ? response.responses[1].responseRange.kvs.first : nil
        guard let mark = response.responses.first?.responseRange.kvs.first else {
            return .unknown(reason: "etcd answered without the write's id")
        }
        switch mark.value {
        case applied: return .committed(revision: mark.createRevision)
        case refused: return .refused(current: current, revision: response.header.revision)
        default: return .notApplied(reason: "etcd did not answer in time; the write was not applied")
        }
    }

    /// A failure after which the request may have reached etcd, and that another attempt may get past.
    static func isTransient(_ error: RPCError) -> Bool {
        [.unavailable, .deadlineExceeded, .cancelled, .unknown, .aborted, .internalError, .resourceExhausted]
            .contains(error.code)
    }

    static func compare(
        _ key: Data, _ target: Etcdserverpb_Compare.CompareTarget, _ result: Etcdserverpb_Compare.CompareResult,
        _ value: Etcdserverpb_Compare.OneOf_TargetUnion
    ) -> Etcdserverpb_Compare {
        Etcdserverpb_Compare.with {
            $0.key = key
            $0.result = result
            $0.target = target
            $0.targetUnion = value
        }
    }

    static func put(_ key: Data, _ value: Data, lease: Int64) -> Etcdserverpb_RequestOp {
        var put = Etcdserverpb_PutRequest()
        put.key = key
        put.value = value
        put.lease = lease
        return Etcdserverpb_RequestOp.with { $0.request = .requestPut(put) }
    }

    static func range(_ key: Data) -> Etcdserverpb_RequestOp {
        var range = Etcdserverpb_RangeRequest()
        range.key = key
        return Etcdserverpb_RequestOp.with { $0.request = .requestRange(range) }
    }

    // MARK: The lease of the ids

    /// The lease new ids go on: granted on first use, and anew every ``idLeaseRotation``.
    private func idLease() async throws -> Int64 {
        let now = ContinuousClock.now
        enum Found {
            case lease(Int64)
            case grant(Task<IdLease, any Error>)
        }
        let found: Found = state.withLock { state in
            if let lease = state.idLease, now - lease.granted < Self.idLeaseRotation { return .lease(lease.id) }
            if let grant = state.grant { return .grant(grant) }
            let etcd = self.etcd
            let grant = Task {
                let granted = ContinuousClock.now
                return IdLease(id: try await etcd.grantLease(ttl: Self.idLeaseTTL), granted: granted)
            }
            state.grant = grant
            return .grant(grant)
        }
        // The lease of the last 30 s, without a task; otherwise the grant under way.
        let task: Task<IdLease, any Error>
        switch found {
        case .lease(let id): return id
        case .grant(let grant): task = grant
        }
        do {
            let lease = try await task.value
            state.withLock { state in
                if state.grant == task { state.grant = nil }
                if state.idLease.map({ $0.granted < lease.granted }) ?? true { state.idLease = lease }
            }
            return lease.id
        } catch {
            state.withLock { state in if state.grant == task { state.grant = nil } }
            throw error
        }
    }

    private func forgetIdLease() {
        state.withLock { $0.idLease = nil }
    }
}
