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
    /// Since when the watch has failed without running again.
    private var watchFailingSince: ContinuousClock.Instant?
    /// The check of etcd's quorum that runs now.
    private var quorumCheck: Task<Void, Never>?
    /// No linearizable read has succeeded for ``quorumWindow``, and none since.
    private var quorumLost = false
    let writer: FleetWriter
    /// Where this machine's lease is noted for a beacon-fleet started after this one; `nil` without a place.
    let leaseNote: LeaseNote?
    /// The beacond this bridge is registered with (its pid and start time), once known.
    private var daemonIdentity: String?

    public init(configuration: FleetConfiguration, client: BeaconClient, logger: Logger) throws {
        self.configuration = configuration
        self.client = client
        let etcd = try EtcdConnection(configuration: configuration)
        self.etcd = etcd
        self.keys = FleetKeys(prefix: Array(configuration.etcdPrefix.utf8), roots: configuration.prefixes)
        self.logger = logger
        leaseNote = LeaseNote(configuration: configuration)
        writer = FleetWriter(
            etcd: etcd, etcdPrefix: keys.prefix, machine: configuration.machine,
            requestTimeout: configuration.requestTimeout, logger: logger)
    }

    /// Serves until the task is cancelled. Then this machine's lease is left to the next beacon-fleet while beacond
    /// runs (its clients still own their ephemeral keys), and revoked otherwise, so that the keys go at once rather
    /// than after the lease's time to live.
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
            // beacond's clients may still own ephemeral keys on this machine's lease: it is left to the next
            // beacon-fleet, which keeps it (LeaseNote), or to its time to live. When beacond is gone, it is revoked.
            await self.releaseLease()
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

    /// Notes which beacond runs now: the lease of ephemeral keys is noted with it.
    private func learnDaemon() async {
        guard daemonIdentity == nil, let status = try? await client.daemonStatus() else { return }
        daemonIdentity = "\(status.pid)-\(status.startedUsec)"
    }

    /// beacond went away: the clients that owned this machine's ephemeral keys went with it.
    private func daemonLost() async {
        guard provider != nil || lease != nil else { return }
        logger.notice("lost beacond; waiting for it to come back")
        provider = nil
        daemonIdentity = nil
        registrationEpoch += 1
        watchTask?.cancel()
        await revokeLease()
    }

    // MARK: From etcd to beacond

    /// Reads the subtrees when needed, then follows etcd's changes, until cancelled. A failure is tried again, after
    /// a pause from the second one on, and has etcd's quorum checked (``checkQuorum(_:)``), which decides whether
    /// the subtrees are unavailable; so does a watch that keeps failing for ``watchFailureLimit``.
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
                // A stream that ends is tried again, at once the first time: a member going away, or a connection
                // closed, ends the streams it carried, and the next attempt reaches another member or connection.
                // Whether etcd is unavailable is decided by its quorum, not by one stream.
                let reason = Self.describe(error)
                suspectQuorum(reason)
                failures += 1
                let clock = ContinuousClock()
                let since = watchFailingSince ?? clock.now
                watchFailingSince = since
                if clock.now - since > Self.watchFailureLimit {
                    await markUnavailable(provider, reason: "cannot follow etcd's changes: " + reason)
                }
                if failures > 1 {
                    try? await Task.sleep(for: .milliseconds(min(2000, 50 * (1 << min(failures - 2, 6)))))
                }
            }
        }
    }

    /// One attempt: a resync if needed, then the watch from the next revision, until it ends.
    private func follow(_ provider: Int64) async throws {
        if needsResync { try await resync(provider) }
        try await etcd.watch(from: keys.prefix, to: keys.rangeEnd, revision: lastRevision + 1) { response in
            try await self.received(response, provider: provider)
        }
    }

    /// Publishes every key of the subtrees as etcd holds it now; beacond deletes the keys etcd no longer has, so
    /// its watchers see exactly what changed while this machine was away.
    private func resync(_ provider: Int64) async throws {
        await learnDaemon()
        await adoptLease()
        let (kvs, revision) = try await etcd.range(from: keys.prefix, to: keys.rangeEnd)
        var changes: [SizedChange] = []
        for kv in kvs {
            switch keys.change(of: kv, deleted: false) {
            case .success(let change)?: changes.append(SizedChange(change, kv))
            case .failure(let error)?: logger.warning("skipping a value in etcd: \(error)")
            case nil: break
            }
        }
        // The revision goes with the resync: a key absent at it is not brought back by the answer of a write
        // applied before it (a write the previous beacon-fleet had been sent, answered by this one).
        try await publish(changes, provider: provider, resync: true, revision: revision)
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
    private func publish(
        _ changes: [SizedChange], provider: Int64, resync: Bool = false, revision: Int64? = nil
    ) async throws {
        var start = 0
        repeat {
            var end = start
            var bytes = 0
            while end < changes.count, end == start || bytes + changes[end].size <= Self.publishPartBytes {
                bytes += changes[end].size
                end += 1
            }
            let last = end == changes.count
            try await client.publish(
                provider: provider, changes: changes[start..<end].map(\.change), resync: resync,
                more: resync && !last, providerVersion: resync && last ? revision : nil)
            start = end
        } while start < changes.count
    }

    /// Handles one watch response; returns false to end the watch (for a resync).
    private func received(_ response: Etcdserverpb_WatchResponse, provider: Int64) async throws -> Bool {
        guard self.provider == provider else { return false }
        if response.created {
            failures = 0
            watchFailingSince = nil
            if !quorumLost { await markAvailable(provider) }
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

    /// Something failed that a lost quorum would explain: checks etcd's quorum, unless a check runs already.
    private func suspectQuorum(_ reason: String) {
        guard quorumCheck == nil else { return }
        quorumCheck = Task { await self.checkQuorum(reason) }
    }

    /// Reads linearizably until a read succeeds. When none has for ``quorumWindow``, the subtrees are unavailable
    /// until one does and the watch runs again: a dropped connection or stream, or a leader election, is over well
    /// within the window, and only a cluster without a quorum fails that long.
    private func checkQuorum(_ firstReason: String) async {
        let clock = ContinuousClock()
        let started = clock.now
        var reason = firstReason
        while !Task.isCancelled {
            do {
                try await etcd.readLinearizably(prefix: keys.prefix, timeout: .seconds(1))
                break
            } catch {
                reason = Self.describe(error)
                if clock.now - started >= Self.quorumWindow, !quorumLost {
                    quorumLost = true
                    if let provider { await markUnavailable(provider, reason: reason) }
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        quorumCheck = nil
        guard quorumLost else { return }
        quorumLost = false
        logger.notice("etcd has a quorum again")
        // The watch says when this machine follows etcd's changes again.
        if let provider, watchFailingSince == nil, watchTask != nil { await markAvailable(provider) }
    }

    /// How long linearizable reads must fail before the subtrees are unavailable.
    static let quorumWindow = Duration.seconds(2)
    /// How long the watch may fail, with etcd otherwise reachable, before the subtrees are unavailable.
    static let watchFailureLimit = Duration.seconds(10)

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

    /// Carries out a forwarded Set or Unset as one etcd transaction, applied at most once however often it is
    /// sent (``FleetWriter``), and answers what became of it: committed, refused, or, when etcd could not be asked,
    /// `OutcomeUnknown`.
    private func handle(_ request: ProviderRequest, provider: Int64) async -> ProviderAnswer {
        let key = keys.etcdKey(request.key)
        var origin = request.origin
        origin["machine"] = .string(configuration.machine)
        var conditions: [Etcdserverpb_Compare] = []
        if let version = request.ifProviderVersion {
            conditions.append(
                version == 0
                    ? FleetWriter.compare(key, .create, .equal, .createRevision(0))
                    : FleetWriter.compare(key, .mod, .equal, .modRevision(version)))
        }
        if !request.answered, !request.restore {
            // The ephemeral owner went away: delete the key only while it still holds this machine's value.
            guard let lease else { return .error(IOBeaconProviders.ProviderUnavailable.name) }
            conditions.append(FleetWriter.compare(key, .lease, .equal, .lease(lease.id)))
        }
        let operation: FleetWrite.Operation
        switch request.method {
        case .set:
            var leaseID: Int64?
            if request.ephemeral {
                do {
                    leaseID = try await currentLease()
                } catch {
                    return unavailable(request.key, "no lease for the ephemeral key: \(Self.describe(error))")
                }
            }
            let value = FleetValue(value: request.value ?? .null, origin: origin).encoded
            operation = .put(value: value, lease: leaseID)
        case .unset:
            // An Unset of a key that does not exist is refused (KeyNotFound), not written.
            if request.ifProviderVersion == nil, request.answered {
                conditions.append(FleetWriter.compare(key, .create, .greater, .createRevision(0)))
            }
            operation = .delete
        }
        // The daemon names each write, and sends it again under the same name to the next provider when this one
        // goes before answering: then both attempts share one id, and at most one applies.
        let id = request.write.map { "\(configuration.machine)/\($0)" } ?? writer.newID()
        let outcome = await writer.commit(FleetWrite(key: key, operation: operation, conditions: conditions), id: id)
        switch outcome {
        case .committed(let revision):
            let value = request.method == .set ? request.value ?? .null : nil
            if revision > lastRevision { answered.insert(revision) }
            return .change(
                ProvidedChange(key: request.key, value: value, providerVersion: revision, origin: origin))
        case .refused(let current, let revision):
            guard request.answered else { return .error(IOBeaconProperties.VersionMismatch.name) }
            // beacond learns the value that won first, so that the caller's VersionMismatch names the version to
            // try again with.
            await publishCurrent(of: request.key, current, at: revision, provider: provider)
            if request.method == .unset, request.ifProviderVersion == nil {
                // Its one condition is that the key exists.
                return .error(IOBeaconProperties.KeyNotFound.name, ["key": .string(request.key)])
            }
            return .error(IOBeaconProperties.VersionMismatch.name)
        case .notApplied(let reason):
            logger.warning("a write was not applied", metadata: ["key": "\(request.key)", "reason": "\(reason)"])
            suspectQuorum(reason)
            return unavailable(request.key, reason)
        case .unknown(let reason):
            logger.warning(
                "a write's outcome is unknown", metadata: ["key": "\(request.key)", "reason": "\(reason)"])
            suspectQuorum(reason)
            return .error(
                IOBeaconProviders.OutcomeUnknown.name, ["key": .string(request.key), "reason": .string(reason)])
        }
    }

    private func unavailable(_ key: String, _ reason: String) -> ProviderAnswer {
        .error(IOBeaconProviders.ProviderUnavailable.name, ["key": .string(key), "reason": .string(reason)])
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
        keep(id)
        logger.info(
            "granted the lease of this machine's ephemeral keys", metadata: ["lease": "\(id)", "ttl": "\(ttl)"])
        if let daemonIdentity, let leaseNote {
            leaseNote.write(LeaseNote.Contents(lease: id, daemon: daemonIdentity), logger: logger)
        }
        return id
    }

    /// Keeps lease `id` alive every third of its time to live, as this machine's lease.
    private func keep(_ id: Int64) {
        let interval = Duration.milliseconds(configuration.leaseTTL * 1000 / 3)
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
    }

    /// Takes over the lease an earlier beacon-fleet of this machine noted (``LeaseNote``), while it is alive and
    /// was granted for the beacond that runs now: the ephemeral keys on it belong to clients still connected to
    /// it, and stay. A lease noted for another beacond is revoked: its owners went with that beacond.
    private func adoptLease() async {
        guard lease == nil, let leaseNote, let noted = leaseNote.read() else { return }
        guard let status = try? await client.daemonStatus() else { return }
        let daemon = "\(status.pid)-\(status.startedUsec)"
        daemonIdentity = daemon
        guard noted.daemon == daemon else {
            try? await etcd.revokeLease(noted.lease)
            leaseNote.remove()
            logger.info("revoked the lease of a beacond that is gone", metadata: ["lease": "\(noted.lease)"])
            return
        }
        guard let ttl = try? await etcd.leaseTimeToLive(noted.lease), ttl > 0, lease == nil else {
            leaseNote.remove()
            return
        }
        keep(noted.lease)
        logger.info(
            "kept the lease of this machine's ephemeral keys from before a restart",
            metadata: ["lease": "\(noted.lease)", "ttl": "\(ttl)"])
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

    /// Stops keeping the lease alive, and revokes it unless beacond is still there.
    private func releaseLease() async {
        guard provider == nil else {
            lease?.keeper.cancel()
            lease = nil
            return
        }
        await revokeLease()
    }

    private func revokeLease() async {
        guard let (id, keeper) = lease else { return }
        lease = nil
        leaseNote?.remove()
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
