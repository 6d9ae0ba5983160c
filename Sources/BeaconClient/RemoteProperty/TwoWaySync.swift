import BeaconProtocol

/// The state machine of a two-way binding between a remote key and a local value, in JSON terms (`nil`: the key
/// does not exist).
///
/// Rules: the remote state wins at the start and in every conflict. A local change is written with a
/// compare-and-set on the version of the remote state it was based on, one write at a time; local changes made
/// while a write is in flight are merged into one pending write. A write that loses the compare-and-set is
/// reported and the local value is set to the remote one. Values equal to what the other side already has are
/// never sent back, which is what ends the echo of every change: no loops between two bound clients.
///
/// Pure: it only computes ``Action``s; the caller performs them.
struct TwoWaySync: Sendable {
    enum Action: Sendable, Equatable {
        /// Set the local value to this JSON.
        case setLocal(JSONValue?)
        /// Write this JSON (`nil`: Unset) with `ifVersion`.
        case write(JSONValue?, ifVersion: Int64)
        /// A write lost its compare-and-set: the remote key had changed meanwhile.
        case conflict(attempted: JSONValue?, expectedVersion: Int64)
    }

    /// The remote state, once known.
    private(set) var remote: RemoteSnapshot?
    /// The JSON of the local value as last seen or set.
    private(set) var local: JSONValue??
    /// The write in flight, the version it names, and the epoch of the remote state it was based on (its reply's
    /// version belongs to that epoch's daemon).
    private(set) var inFlight: (json: JSONValue?, ifVersion: Int64, epoch: Int)?
    /// The latest local change waiting for the write in flight.
    private(set) var pending: JSONValue??
    /// The local JSON and remote state just before the latest ``Action/setLocal(_:)``, to recognise a local change
    /// that raced with it.
    private(set) var localBeforeAdopting: JSONValue??
    private(set) var remoteBeforeAdopting: RemoteSnapshot?

    init() {}

    /// The watch reported a remote state.
    mutating func remoteChanged(_ snapshot: RemoteSnapshot) -> [Action] {
        if let remote, !snapshot.isNewer(than: remote) { return [] }
        remoteBeforeAdopting = remote
        remote = snapshot
        if inFlight != nil { return [] }
        return adoptRemote()
    }

    /// The local value changed (also as the echo of a ``Action/setLocal(_:)``).
    mutating func localChanged(_ json: JSONValue?) -> [Action] {
        if let local, local == json { return [] }
        local = .some(json)
        guard let remote else { return [] }
        if inFlight != nil {
            pending = .some(json)
            return []
        }
        if remote.json == json { return [] }
        inFlight = (json, remote.keyVersion, remote.epoch)
        return [.write(json, ifVersion: remote.keyVersion)]
    }

    /// The write in flight succeeded with the change's `version` (0 when an Unset found the key already gone).
    ///
    /// A pending local change was made on the value just written, so it is written with that write's version:
    /// when another client changed the key after our write (and the watch already said so), the daemon refuses
    /// it and the conflict is reported, instead of the other change being overwritten unseen.
    mutating func writeSucceeded(version: Int64) -> [Action] {
        guard let written = inFlight else { return [] }
        inFlight = nil
        let ownKeyVersion = written.json == nil ? 0 : version
        if let current = remote, current.epoch == written.epoch, version > current.version {
            remote = RemoteSnapshot(
                json: written.json, keyVersion: ownKeyVersion, version: version, epoch: current.epoch)
        }
        if let next = pending {
            pending = nil
            if let remote, remote.json != next {
                inFlight = (next, ownKeyVersion, written.epoch)
                return [.write(next, ifVersion: ownKeyVersion)]
            }
        }
        return adoptRemote()
    }

    /// The write in flight failed; `mismatch` when it lost the compare-and-set. Pending local changes are
    /// dropped: the remote state wins.
    mutating func writeFailed(mismatch: Bool) -> [Action] {
        guard let written = inFlight else { return [] }
        inFlight = nil
        pending = nil
        var actions: [Action] = []
        if mismatch { actions.append(.conflict(attempted: written.json, expectedVersion: written.ifVersion)) }
        return actions + adoptRemote()
    }

    /// Sets the local value to the remote one when they differ.
    private mutating func adoptRemote() -> [Action] {
        guard let remote else { return [] }
        if let local, local == remote.json { return [] }
        localBeforeAdopting = local
        local = .some(remote.json)
        return [.setLocal(remote.json)]
    }

    /// Records the JSON the local value has after a ``Action/setLocal(_:)`` (its encoding may differ from the
    /// remote JSON, e.g. `1.0` and `1`), so that its echo is recognised.
    mutating func localApplied(_ json: JSONValue?) {
        local = .some(json)
    }
}
