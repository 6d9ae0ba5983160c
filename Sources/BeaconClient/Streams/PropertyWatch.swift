import BeaconProtocol
import Synchronization

/// One reply of a property watch, after the client's bookkeeping.
public struct PropertyWatchBatch: Sendable, Hashable {
    /// Where a batch comes from.
    public enum Kind: Sendable, Hashable {
        /// The first reply of the watch: with `initial`, the current value of every matching key; otherwise empty.
        case initial
        /// The first reply after a reconnection: every key changed while the client was away, each once with its
        /// latest state (intermediate values are not replayed).
        case replay
        /// The daemon could not replay from the last version the client saw and sent every current value
        /// instead; keys the client knew that are gone come first, as deletions.
        case resync
        /// A later reply: changes as they happen.
        case changes
    }

    /// Where this batch comes from.
    public var kind: Kind
    /// The changes in version order.
    ///
    /// After a resynchronisation (``resync``) the client adds a deletion for every key it had reported that is no
    /// longer present, so applying the changes in order always gives the daemon's state.
    public var changes: [PropertyChange]
    /// The daemon's version after these changes.
    public var version: Int64
    /// The first batch of a subscription: with `initial`, the current values; after a reconnection, the changes
    /// made while the client was away.
    public var isFirst: Bool
    /// The batch holds the current value of every matching key (the first batch of a watch with `initial`, or a
    /// resynchronisation): a key it does not mention does not exist.
    public var isSnapshot: Bool
    /// The daemon could not replay the changes since the last version the client saw (its history was too short,
    /// or its store was replaced) and sent every current value instead: ``kind`` is ``Kind/resync``.
    public var resync: Bool { kind == .resync }
    /// Changes the daemon merged away because the client read too slowly (the latest value of each key is kept).
    public var overflow: Int64
}

/// A reply of `io.beacon.Properties.Watch`, read from its frame without building the JSON tree of the reply.
struct WatchReply: Sendable {
    var changes: [PropertyChange]
    var version: Int64
    var resync: Bool
    var overflow: Int64

    static let decode: StreamSubscription<WatchReply>.Decode = { (frame, limits) throws(VarlinkError) in
        var changes: [PropertyChange] = []
        return try .watch(
            frame, limits, change: { changes.append(PropertyChange($0)) },
            make: { WatchReply(changes: changes, version: $1, resync: $0.resync, overflow: $0.overflow) })
    }
}

extension DecodedReply {
    /// A Watch reply read from `frame`: `change` gets each change in order, then `make` builds the reply from the
    /// frame's members and its version. The daemon's error reply is ``error(_:)``; a reply without a version is a
    /// protocol error.
    @inline(__always)
    static func watch(
        _ frame: UnsafeRawBufferPointer,
        _ limits: JSONLimits,
        change: (consuming WatchReplyFrame.Change) -> Void,
        make: (WatchReplyFrame, Int64) -> Reply
    ) throws(VarlinkError) -> DecodedReply {
        let parsed = try WatchReplyFrame(parsing: frame, limits: limits, change: change)
        if let error = parsed.error { return .error(error) }
        guard let version = parsed.version else {
            throw VarlinkError.protocolError("the Watch reply has no \"version\"")
        }
        return .reply(make(parsed, version), continues: parsed.continues)
    }
}

/// A reply of a watch of one exact key (a remote property's), read for that key only: no array of changes, no
/// ``PropertyChange``, no record of the keys seen. A change delivered this way allocates nothing.
struct KeyWatchReply: Sendable {
    /// The key's last change in the reply, as the state it leaves; `nil` when the reply has none.
    var latest: RemoteSnapshot?
    var version: Int64
    var resync: Bool

    /// Reads the replies of a watch of `key`.
    static func decoder(for key: String) -> StreamSubscription<KeyWatchReply>.Decode {
        { (frame, limits) throws(VarlinkError) in
            var latest: RemoteSnapshot?
            return try .watch(
                frame, limits,
                change: { change in
                    guard change.key == key else { return }
                    latest = RemoteSnapshot(
                        json: change.shownValue, keyVersion: change.deleted ? 0 : change.version,
                        version: change.version)
                },
                make: { KeyWatchReply(latest: latest, version: $1, resync: $0.resync) })
        }
    }
}

/// The state of a watch that survives reconnections: the last version seen, so that a new subscription asks for
/// the changes `since` it, and the keys reported so far, so that a resynchronisation can report deletions.
final class PropertyWatch: Sendable {
    private struct State {
        var lastVersion: Int64?
        var knownKeys: Set<String> = []
        /// Ask for the initial values (and treat the reply as a resynchronisation) on the next subscription.
        var forceResync = false
        /// How many times the daemon's version went back (see ``RemoteSnapshot/epoch``).
        var epoch = 0
    }

    let patterns: [String]
    let initial: Bool
    let old: Bool
    /// Changes carry their origin; a watch that only follows values asks the daemon to leave it out.
    let origin: Bool
    private let state = Mutex(State())

    init(patterns: [String], initial: Bool, old: Bool, origin: Bool = true) {
        self.patterns = patterns
        self.initial = initial
        self.old = old
        self.origin = origin
    }

    /// The parameters of the next `Watch` call; `followsSession` when the session's activity suspends the watch
    /// (``BeaconClient/Options/suspendsWhileSessionInactive``).
    func parameters(followsSession: Bool = false) -> [String: JSONValue] {
        var parameters: [String: JSONValue] = ["patterns": .array(patterns.map { .string($0) })]
        if old { parameters["old"] = true }
        if !origin { parameters["origin"] = false }
        // While suspended, a watch keeps the latest change of each key: what a property needs to be right on resume.
        parameters["whileSuspended"] = .string(BeaconClient.SuspensionBehavior.coalesce.rawValue)
        if followsSession { parameters["suspendWhileInactive"] = true }
        state.withLock { state in
            if let since = state.lastVersion, !state.forceResync {
                parameters["since"] = .int(since)
            } else if initial || state.forceResync {
                parameters["initial"] = true
            }
        }
        return parameters
    }

    /// Turns a reply into a batch; `nil` when the subscription must be made again (the daemon's version went
    /// back: it lost the history the client relies on, so the client asks for every current value).
    func batch(from reply: WatchReply, first: Bool) -> PropertyWatchBatch? {
        var changes = reply.changes
        let version = reply.version
        let daemonResync = reply.resync
        let overflow = reply.overflow
        return state.withLock { state -> PropertyWatchBatch? in
            let reconnected = state.lastVersion != nil
            guard let (resync, isSnapshot) = account(&state, version: version, daemonResync: daemonResync, first: first)
            else { return nil }
            if resync {
                let present = Set(changes.map(\.key))
                let gone = state.knownKeys.subtracting(present).sorted()
                let deletions = gone.map { PropertyChange(key: $0, value: nil, version: version, deleted: true) }
                changes = deletions + changes
            }
            for change in changes {
                if change.deleted { state.knownKeys.remove(change.key) } else { state.knownKeys.insert(change.key) }
            }
            let kind: PropertyWatchBatch.Kind =
                resync ? .resync : !first ? .changes : reconnected ? .replay : .initial
            return PropertyWatchBatch(
                kind: kind, changes: changes, version: version, isFirst: first, isSnapshot: isSnapshot,
                overflow: overflow)
        }
    }

    /// What a key watch's reply is: whether it holds the key's current state (a reply without a change of the key
    /// then says it has no value), and the epoch of its states (see ``RemoteSnapshot/epoch``); `nil` when the
    /// subscription must be made again, as for ``batch(from:first:)``.
    func account(_ reply: KeyWatchReply, first: Bool) -> (isSnapshot: Bool, epoch: Int)? {
        state.withLock { state in
            account(&state, version: reply.version, daemonResync: reply.resync, first: first).map {
                ($0.isSnapshot, state.epoch)
            }
        }
    }

    /// What every reply does to the state: `nil` when the subscription must be made again (the daemon's version
    /// went back), otherwise whether the reply is a resynchronisation and whether it holds every current value.
    /// The reply asked for after the version went back starts a new epoch (``RemoteSnapshot/epoch``).
    private func account(
        _ state: inout State, version: Int64, daemonResync: Bool, first: Bool
    ) -> (resync: Bool, isSnapshot: Bool)? {
        var isSnapshot = daemonResync
        if first {
            if state.lastVersion == nil && initial { isSnapshot = true }
            if let since = state.lastVersion, !state.forceResync, version < since {
                state.forceResync = true
                return nil
            }
            if state.forceResync {
                state.forceResync = false
                state.epoch += 1
                // The daemon's store was replaced: its versions are lower than the ones seen, and the next
                // resubscription resumes from this one.
                state.lastVersion = version
                return (true, true)
            }
        }
        state.lastVersion = max(state.lastVersion ?? 0, version)
        return (daemonResync, isSnapshot)
    }

    /// The parameters of each subscription on `client`: made again at each resubscription, which resumes from the
    /// last version seen.
    private func parameters(on client: BeaconClient) -> @Sendable () -> [String: JSONValue] {
        let followsSession = client.options.suspendsWhileSessionInactive
        return { self.parameters(followsSession: followsSession) }
    }

    /// Runs the watch on `client` until the task is cancelled or the daemon answers with an error, calling
    /// `deliver` with every batch in order, on the connection's event loop (it must not block).
    func run(
        on client: BeaconClient,
        deliver: @escaping @Sendable (PropertyWatchBatch) -> Void
    ) async -> BeaconError? {
        await client.runResubscribing(
            method: Method.watch, parameters: parameters(on: client), decode: WatchReply.decode
        ) { (reply, first) throws(BeaconError) in
            guard let batch = self.batch(from: reply, first: first) else { return .resubscribe }
            deliver(batch)
            return .proceed
        }
    }

    /// ``run(on:deliver:)`` for a watch of the one exact key `patterns[0]`: `deliver` gets the state each reply
    /// leaves the key in, when the reply says it (a change of the key, or a snapshot without one).
    func runKey(
        on client: BeaconClient,
        deliver: @escaping @Sendable (RemoteSnapshot) -> Void
    ) async -> BeaconError? {
        await client.runResubscribing(
            method: Method.watch, parameters: parameters(on: client), decode: KeyWatchReply.decoder(for: patterns[0])
        ) { (reply, first) throws(BeaconError) in
            guard let (isSnapshot, epoch) = self.account(reply, first: first) else { return .resubscribe }
            if var latest = reply.latest {
                latest.epoch = epoch
                deliver(latest)
            } else if isSnapshot {
                deliver(RemoteSnapshot(json: nil, keyVersion: 0, version: reply.version, epoch: epoch))
            }
            return .proceed
        }
    }
}

extension BeaconClient {
    /// The changes of the keys matching `patterns`, as batches, across reconnections (resubscribing with `since`,
    /// so no change is missed).
    ///
    /// - Parameters:
    ///   - patterns: the keys to watch; a segment `*` stands for exactly one segment, a last segment `**` for one or
    ///     more.
    ///   - initial: the first batch holds the current value of every matching key.
    ///   - old: changes carry the previous value.
    ///   - origin: changes carry who made them (``PropertyChange/origin``); `false` leaves it out, which makes
    ///     every change shorter to send and to read.
    /// The sequence throws when the daemon refuses the watch (``BeaconError/Code/invalidPattern``, ...); ending
    /// the iteration closes the watch.
    public func watch(
        _ patterns: [String],
        initial: Bool = false,
        old: Bool = false,
        origin: Bool = true
    ) -> AsyncThrowingStream<PropertyWatchBatch, any Error> {
        let (output, continuation) = AsyncThrowingStream.makeStream(of: PropertyWatchBatch.self)
        let watch = PropertyWatch(patterns: patterns, initial: initial, old: old, origin: origin)
        let task = Task {
            let error = await watch.run(on: self) { batch in continuation.yield(batch) }
            continuation.finish(throwing: error)
        }
        continuation.onTermination = { _ in task.cancel() }
        return output
    }
}
