import BeaconClient
import BeaconProtocol
import EtcdAPI
import Foundation
import GRPCCore
import Logging
import Signals

/// Mirrors the configured subtrees between beacond and etcd: it registers as their provider, carries out their
/// writes as etcd transactions, and publishes what etcd holds and every change it reports, in revision order.
///
/// The provider versions it gives beacond are etcd revisions: a value's `mod_revision`, a deletion's revision. A
/// compare-and-set compares `mod_revision` (or `create_revision` 0 for an absent key) in the same transaction as
/// the write, so exactly one of several machines racing on a key wins.
public actor FleetBridge {
    let configuration: FleetConfiguration
    let client: BeaconClient
    let etcd: EtcdConnection
    let keys: FleetKeys
    let logger: Logger

    /// The current registration with beacond; `nil` while there is none.
    private var provider: Int64?
    /// Counts registrations and losses of beacond, which end the watch of the one before.
    private var registrationEpoch = 0
    /// What beacond was last told about etcd: `nil` before anything was said on this registration.
    private var available: Bool?
    /// The last etcd revision whose changes beacond has; the watch resumes after it.
    private var lastRevision: Int64 = 0
    /// Revisions of this machine's writes whose change beacond already has, from the write's answer, and which the
    /// watch has not reached yet: the watch skips them rather than publishing them a second time.
    private var answered: Set<Int64> = []
    /// Whether the subtrees must be read whole again: on each registration, and after a compaction.
    private var needsResync = true
    /// The watch that runs now, cancelled when the registration changes.
    private var watchTask: Task<Void, any Error>?
    private var registrations: AsyncStream<Void>.Continuation?
    /// The lease of this machine's ephemeral keys, and the task that keeps it alive.
    private var lease: (id: Int64, keeper: Task<Void, Never>)?
    private var leaseGrant: Task<Int64, any Error>?
    /// The lease's keep-alive stream failed, and no renewal has been confirmed since.
    private var leaseInterrupted = false
    private var failures = 0

    public init(configuration: FleetConfiguration, client: BeaconClient, logger: Logger) throws {
        self.configuration = configuration
        self.client = client
        self.etcd = try EtcdConnection(configuration: configuration)
        self.keys = FleetKeys(prefix: Array(configuration.etcdPrefix.utf8), roots: configuration.prefixes)
        self.logger = logger
    }

    /// Serves until the task is cancelled; then revokes this machine's lease, so that its ephemeral keys go at
    /// once rather than after the lease's time to live.
    public nonisolated func run() async throws {
        let (wakeups, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await setRegistrations(continuation)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.etcd.run() }
            let registration = client.provide(
                configuration.prefixes.map { $0 + ".**" }, unavailable: "reading the subtrees from etcd",
                registered: { provider in await self.registered(provider) },
                handle: { provider, request in await self.handle(request, provider: provider) })
            let states = client.connectionState.values
            group.addTask {
                for await state in states where state == .disconnected { await self.daemonLost() }
            }
            await withTaskCancellationHandler {
                await self.synchronize(wakeups)
            } onCancel: {
                continuation.finish()
            }
            registration.dispose()
            await self.revokeLease()
            self.etcd.close()
            group.cancelAll()
        }
    }

    private func setRegistrations(_ continuation: AsyncStream<Void>.Continuation) {
        registrations = continuation
    }

    // MARK: Registration

    private func registered(_ number: Int64) {
        logger.info("registered with beacond", metadata: ["provider": "\(number)"])
        provider = number
        registrationEpoch += 1
        available = nil
        needsResync = true
        answered.removeAll()
        watchTask?.cancel()
        registrations?.yield()
    }

    /// beacond went away: the clients that owned this machine's ephemeral keys went with it.
    private func daemonLost() async {
        guard provider != nil || lease != nil else { return }
        logger.notice("lost beacond; waiting for it to come back")
        provider = nil
        registrationEpoch += 1
        watchTask?.cancel()
        await revokeLease()
    }

    // MARK: From etcd to beacond

    /// Reads the subtrees when needed, then follows etcd's changes, until cancelled; a failure marks the subtrees
    /// unavailable, and the next attempt follows after a pause.
    private func synchronize(_ wakeups: AsyncStream<Void>) async {
        var iterator = wakeups.makeAsyncIterator()
        while !Task.isCancelled {
            guard let provider else {
                guard await iterator.next() != nil else { return }
                continue
            }
            let epoch = registrationEpoch
            let watch = Task { try await self.follow(provider) }
            watchTask = watch
            do {
                // The watch is a task of its own, so that a new registration can end it; cancelling this loop ends
                // it too.
                try await withTaskCancellationHandler {
                    try await watch.value
                } onCancel: {
                    watch.cancel()
                }
                failures = 0
            } catch {
                // A watch ended by a new registration, or by beacond going away, is no failure of etcd's (the new
                // registration may even have the same number, as a restarted beacond counts from the start).
                guard !Task.isCancelled, registrationEpoch == epoch else { continue }
                // The first failure is retried at once without a word: a member going away ends the streams
                // it served, and the next attempt reaches another member.
                failures += 1
                if failures > 1 { await markUnavailable(provider, reason: Self.describe(error)) }
                let pause = Duration.milliseconds(min(2000, 50 * (1 << min(failures - 1, 6))))
                try? await Task.sleep(for: pause)
            }
        }
    }

    /// One attempt: a resync if needed, then the watch from the next revision, until it ends.
    private func follow(_ provider: Int64) async throws {
        if needsResync { try await resync(provider) }
        try await etcd.watch(prefix: keys.prefix, from: lastRevision + 1) { response in
            try await self.received(response, provider: provider)
        }
    }

    /// Publishes every key of the subtrees as etcd holds it now; beacond deletes the keys etcd no longer has, so
    /// its watchers see exactly what changed while this machine was away.
    private func resync(_ provider: Int64) async throws {
        let (kvs, revision) = try await etcd.range(prefix: keys.prefix)
        var changes: [SizedChange] = []
        for kv in kvs {
            switch keys.change(of: kv, deleted: false) {
            case .success(let change)?: changes.append(SizedChange(change, kv))
            case .failure(let error)?: logger.warning("skipping a value in etcd: \(error)")
            case nil: break
            }
        }
        try await publish(changes, provider: provider, resync: true)
        lastRevision = revision
        needsResync = false
        logger.info(
            "read the subtrees from etcd", metadata: ["keys": "\(changes.count)", "revision": "\(lastRevision)"])
    }

    /// A change, and about how many bytes it takes in a Publish: its key and its value as etcd holds it, which
    /// has the origin and the value in the same JSON form.
    struct SizedChange {
        var change: ProvidedChange
        var size: Int

        init(_ change: ProvidedChange, _ kv: Mvccpb_KeyValue) {
            self.change = change
            size = kv.key.count + kv.value.count + 96
        }
    }

    /// At most about this many bytes of changes go in one Publish, well below beacond's message limit
    /// (`limits.maxMessageSize`, 1 MiB unless configured).
    static let publishPartBytes = 256 << 10

    /// Publishes `changes` in order, in parts of at most ``publishPartBytes`` (a single larger change alone); the
    /// parts of a resync but the last say that more follow, so that beacond deletes the keys none of them named
    /// only after the last.
    private func publish(_ changes: [SizedChange], provider: Int64, resync: Bool = false) async throws {
        var start = 0
        repeat {
            var end = start
            var bytes = 0
            while end < changes.count, end == start || bytes + changes[end].size <= Self.publishPartBytes {
                bytes += changes[end].size
                end += 1
            }
            try await client.publish(
                provider: provider, changes: changes[start..<end].map(\.change), resync: resync,
                more: resync && end < changes.count)
            start = end
        } while start < changes.count
    }

    /// Handles one watch response; returns false to end the watch (for a resync).
    private func received(_ response: Etcdserverpb_WatchResponse, provider: Int64) async throws -> Bool {
        guard self.provider == provider else { return false }
        if response.created {
            failures = 0
            await markAvailable(provider)
        }
        if response.canceled {
            if response.compactRevision > 0 {
                logger.notice(
                    "etcd compacted the revisions this machine had not seen; reading the subtrees again",
                    metadata: ["after": "\(lastRevision)", "compacted": "\(response.compactRevision)"])
                needsResync = true
                return false
            }
            throw EtcdError.refused("etcd cancelled the watch: \(response.cancelReason)")
        }
        guard !response.events.isEmpty else { return true }
        var changes: [SizedChange] = []
        var last = lastRevision
        for event in response.events {
            last = max(last, event.kv.modRevision)
            if !answered.isEmpty, answered.remove(event.kv.modRevision) != nil { continue }
            switch keys.change(of: event.kv, deleted: event.type == .delete) {
            case .success(let change)?: changes.append(SizedChange(change, event.kv))
            case .failure(let error)?: logger.warning("skipping a change in etcd: \(error)")
            case nil: break
            }
        }
        if !changes.isEmpty { try await publish(changes, provider: provider) }
        lastRevision = last
        if !answered.isEmpty { answered = answered.filter { $0 > last } }
        return true
    }

    private func markAvailable(_ provider: Int64) async {
        guard available != true else { return }
        if available == false { logger.notice("etcd is reachable again") }
        available = true
        try? await client.setAvailable(provider: provider, true)
    }

    private func markUnavailable(_ provider: Int64, reason: String) async {
        guard available != false else { return }
        logger.warning("etcd is unavailable; writes of the fleet's keys fail", metadata: ["reason": "\(reason)"])
        available = false
        try? await client.setAvailable(provider: provider, false, reason: "etcd is unavailable: " + reason)
    }

    // MARK: From beacond to etcd

    /// Carries out a forwarded Set or Unset as one etcd transaction.
    private func handle(_ request: ProviderRequest, provider: Int64) async -> ProviderAnswer {
        let key = keys.etcdKey(request.key)
        var origin = request.origin
        origin["machine"] = .string(configuration.machine)
        let write = "\(configuration.machine)/\(UInt64.random(in: 1...UInt64.max))"
        var transaction = Etcdserverpb_TxnRequest()
        if let version = request.ifProviderVersion {
            transaction.compare.append(
                version == 0
                    ? Self.equal(key, .create, .createRevision(0)) : Self.equal(key, .mod, .modRevision(version)))
        }
        do {
            if !request.answered {
                // The ephemeral owner went away: delete the key only while it still holds this machine's value.
                guard let lease else { return .error("io.beacon.Providers.ProviderUnavailable") }
                transaction.compare.append(Self.equal(key, .lease, .lease(lease.id)))
            }
            var operation = Etcdserverpb_RequestOp()
            switch request.method {
            case .set:
                var put = Etcdserverpb_PutRequest()
                put.key = key
                put.value = FleetValue(value: request.value ?? .null, origin: origin, write: write).encoded
                if request.ephemeral { put.lease = try await currentLease() }
                operation.request = .requestPut(put)
            case .unset:
                var delete = Etcdserverpb_DeleteRangeRequest()
                delete.key = key
                operation.request = .requestDeleteRange(delete)
            }
            transaction.success = [operation]
            var read = Etcdserverpb_RangeRequest()
            read.key = key
            transaction.failure = [Etcdserverpb_RequestOp.with { $0.request = .requestRange(read) }]
            let (response, retried) = try await commit(transaction)
            let revision = response.header.revision
            let current = response.responses.first?.responseRange.kvs.first
            let value = request.method == .set ? request.value ?? .null : nil
            let applied = ProviderAnswer.change(
                ProvidedChange(key: request.key, value: value, providerVersion: revision, origin: origin))
            guard response.succeeded else {
                if retried {
                    // The first attempt may have been applied: then the key holds this very write, or is gone.
                    if let current, (try? FleetValue(decoding: current.value))?.write == write {
                        return answering(
                            current.modRevision,
                            with: .change(
                                ProvidedChange(
                                    key: request.key, value: value, providerVersion: current.modRevision,
                                    origin: origin)))
                    }
                    if current == nil, request.method == .unset { return applied }
                }
                // Someone else's write won: beacond learns the value that won first, so that the caller's
                // VersionMismatch names the version to try again with.
                if request.answered { await publishCurrent(of: request.key, current, at: revision, provider: provider) }
                return .error("io.beacon.Properties.VersionMismatch")
            }
            if request.method == .unset, response.responses.first?.responseDeleteRange.deleted == 0, !retried {
                await publishCurrent(of: request.key, nil, at: revision, provider: provider)
                return .error("io.beacon.Properties.KeyNotFound", ["key": .string(request.key)])
            }
            return answering(revision, with: applied)
        } catch {
            let reason = "etcd did not confirm the write (it may still be applied): \(Self.describe(error))"
            logger.warning("a write failed", metadata: ["key": "\(request.key)", "reason": "\(reason)"])
            return .error(
                "io.beacon.Providers.ProviderUnavailable", ["key": .string(request.key), "reason": .string(reason)])
        }
    }

    /// Returns `answer`, which gives beacond the change at `revision`, and notes it for the watch, unless the watch
    /// has passed that revision already.
    private func answering(_ revision: Int64, with answer: ProviderAnswer) -> ProviderAnswer {
        if revision > lastRevision { answered.insert(revision) }
        return answer
    }

    /// The condition that `key`'s `target` is `value`.
    static func equal(
        _ key: Data, _ target: Etcdserverpb_Compare.CompareTarget, _ value: Etcdserverpb_Compare.OneOf_TargetUnion
    ) -> Etcdserverpb_Compare {
        Etcdserverpb_Compare.with {
            $0.key = key
            $0.result = .equal
            $0.target = target
            $0.targetUnion = value
        }
    }

    /// Sends `transaction` until etcd answers or the request timeout passes. An attempt that times out or finds
    /// no connection is made again: a member going away, or the election after its leader went, drops the
    /// proposals it had, and etcd itself would answer them only after several seconds. Returns whether an
    /// attempt was repeated, in which case an earlier one may have been applied.
    private func commit(
        _ transaction: Etcdserverpb_TxnRequest
    ) async throws -> (Etcdserverpb_TxnResponse, retried: Bool) {
        let clock = ContinuousClock()
        let deadline = clock.now + configuration.requestTimeout
        let attemptTimeout = max(configuration.requestTimeout / 4, .milliseconds(500))
        var retried = false
        while true {
            let remaining = deadline - clock.now
            do {
                return (try await etcd.txn(transaction, timeout: min(attemptTimeout, remaining)), retried)
            } catch let error as RPCError where [.deadlineExceeded, .unavailable].contains(error.code) {
                guard deadline - clock.now > .milliseconds(100) else { throw error }
                logger.debug("sending a write to etcd again", metadata: ["reason": "\(Self.describe(error))"])
                retried = true
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    private func publishCurrent(of key: String, _ kv: Mvccpb_KeyValue?, at revision: Int64, provider: Int64) async {
        let change: ProvidedChange
        if let kv, case .success(let found)? = keys.change(of: kv, deleted: false) {
            change = found
        } else if kv == nil {
            change = ProvidedChange(key: key, value: nil, providerVersion: revision)
        } else {
            return
        }
        _ = try? await client.publish(provider: provider, changes: [change])
    }

    // MARK: The lease of ephemeral keys

    /// This machine's lease, granted on first use and kept alive every third of its time to live.
    private func currentLease() async throws -> Int64 {
        if let lease { return lease.id }
        if let leaseGrant { return try await leaseGrant.value }
        let ttl = configuration.leaseTTL
        let grant = Task { try await etcd.grantLease(ttl: ttl) }
        leaseGrant = grant
        defer { leaseGrant = nil }
        let id = try await grant.value
        let interval = Duration.milliseconds(ttl * 1000 / 3)
        let keeper = Task { [etcd] in
            while !Task.isCancelled {
                do {
                    try await etcd.keepAlive(id, every: interval) { await self.leaseRenewed(id) }
                    break
                } catch {
                    self.leaseInterrupted(id, error)
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
            self.leaseEnded(id)
        }
        lease = (id, keeper)
        leaseInterrupted = false
        logger.info(
            "granted the lease of this machine's ephemeral keys", metadata: ["lease": "\(id)", "ttl": "\(ttl)"])
        return id
    }

    private func leaseInterrupted(_ id: Int64, _ error: any Error) {
        guard lease?.id == id, !Task.isCancelled, !leaseInterrupted else { return }
        leaseInterrupted = true
        logger.notice(
            "the lease of this machine's ephemeral keys is not being kept alive; trying again",
            metadata: ["reason": "\(Self.describe(error))"])
    }

    private func leaseRenewed(_ id: Int64) {
        guard lease?.id == id, leaseInterrupted else { return }
        leaseInterrupted = false
        logger.notice("the lease of this machine's ephemeral keys is kept alive again")
    }

    private func leaseEnded(_ id: Int64) {
        guard lease?.id == id else { return }
        logger.notice("the lease of this machine's ephemeral keys expired; etcd deleted them")
        lease = nil
    }

    private func revokeLease() async {
        guard let (id, keeper) = lease else { return }
        lease = nil
        keeper.cancel()
        do {
            try await etcd.revokeLease(id)
        } catch {
            logger.warning("could not revoke the lease; its keys go when it expires: \(Self.describe(error))")
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? RPCError { return "\(error.code): \(error.message)" }
        return "\(error)"
    }
}
