import BeaconProtocol

/// The properties: entries, tombstones of deleted keys, the version counter and the ephemeral properties' owners.
///
/// Every change queues its store writes with the ``StoreWriter`` and returns its change event; until the writer
/// commits, the change can be undone (``rollBack()``), so that a tick whose commit failed leaves no trace.
///
/// The store is the table of record for persistent properties: a start reads only the tombstones and counters, and
/// ``entries`` holds the entries read since (``index(forKey:)`` reads a missing one from the store), the ephemeral
/// ones and those changed in the current tick. Reads of a prefix or of a history (``entries(below:)``,
/// ``changes(since:matching:)``, ``snapshot(matching:)``) ask the store for its rows in order, and take the state of
/// a key changed in this tick, or ephemeral, from memory: the store has it only once the tick commits.
final class PropertyTable {
    /// The longest Get reply kept with its entry, in bytes.
    static let cachedGetReplyLimit = 2048
    /// Past this many entries in memory, a commit lets go of those the store holds as they are.
    static let cachedEntryLimit = 1 << 16
    /// Versions are handed out in blocks: the store records the block's end before any version in it is used.
    static let versionBlock: Int64 = 100_000

    let writer: StoreWriter
    /// How many deletions and settings changes are kept for `since` replays, and the floor below which replays
    /// resync.
    var history: History
    /// Told of each stored row the bus could not have written, once per row.
    private var skipped = SkippedRows()

    // Written on every Set. The release build skips the runtime exclusivity checks of the whole daemon
    // (`-enforce-exclusivity=unchecked`, scripts/build-release.sh); the debug builds the tests run keep them.
    var entries: [String: Entry] = [:]
    var tombstones: [String: Tombstone] = [:]
    private(set) var version: Int64 = 0
    /// No version above this one is handed out before the store knows the new ceiling.
    private(set) var versionCeiling: Int64 = 0
    /// Keys of the ephemeral properties, by owning connection.
    private(set) var ephemeralKeys: [Int: Set<String>] = [:]

    private(set) var undo: [Undo] = []
    /// What else the changes not yet committed changed (``Uncommitted``).
    private(set) var uncommitted = Uncommitted()
    /// The keys set since the start, with the version of each Set, in version order: a `since` replay from
    /// ``recentFloor`` on reads these keys instead of every stored row. Up to twice ``recentLimit``; the oldest
    /// half goes at a commit past that, raising the floor.
    private(set) var recent: [(version: Int64, name: String)] = []
    /// What ``recent`` covers, and the Sets the last clean stop kept (``RecentBounds``).
    private(set) var recentBounds = RecentBounds()
    static let recentLimit = 1 << 16

    init(writer: StoreWriter, historyLimit: Int) {
        self.writer = writer
        self.history = History(limit: historyLimit)
    }

    /// Starts the table on the store's contents: its counters and tombstones (the properties are read when needed). A
    /// row that could not have been written by the bus (a key that is not a valid key, a version below 1, a key both
    /// set and deleted) is skipped and reported to `skipped` with the reason, here for tombstones and when read for
    /// properties. The ephemeral properties did not survive the restart: their deletions are recorded for `since`
    /// replays. Queues store writes; commit them before serving.
    /// Returns the highest version of a tombstone.
    @discardableResult
    func load(
        _ contents: StoreContents, now: Int64,
        skipped: @escaping (_ table: String, _ key: String, _ reason: String) -> Void
    ) throws -> Int64 {
        self.skipped.report = skipped
        var stored: Int64 = 0
        // The ceiling is above every version handed out; a store without one (never changed since it was made)
        // is read whole for its highest version, once.
        var highest = try contents.meta["versionCeiling"] ?? writer.storage.highestVersion()
        writer.opened(propertyCount: Int(contents.meta["propertyCount"] ?? 0))
        for tombstone in contents.tombstones {
            if let reason = Self.invalidity(of: tombstone.key, version: tombstone.version) {
                report("tombstone", tombstone.key, reason)
                continue
            }
            tombstones[tombstone.key] = Tombstone(
                version: tombstone.version, modifiedUsec: tombstone.modifiedUsec, origin: tombstone.origin)
            highest = max(highest, tombstone.version)
            stored = max(stored, tombstone.version)
        }
        history.floor = contents.meta["historyFloor"] ?? 0
        version = highest
        versionCeiling = highest
        // Where the last run's counter ended, before the deletions of its ephemeral properties below.
        recentBounds.loadedVersion = version
        for key in contents.ephemeralKeys {
            writer.record(.unmarkEphemeral(key: key))
            guard Self.invalidity(of: key, version: 1) == nil else {
                report("ephemeral", key, "not a valid key")
                continue
            }
            guard try writer.storage.property(key) == nil else { continue }
            let deletion = Tombstone(version: nextVersion(), modifiedUsec: now, origin: .daemon)
            tombstones[key] = deletion
            writer.record(
                .upsertTombstone(
                    StoredTombstone(key: key, version: deletion.version, modifiedUsec: now, origin: .daemon))
            )
        }
        recentBounds.floor = version
        // No block of versions is reserved here: the first change reserves one, in its own commit. So a start that
        // has nothing to repair writes nothing before its first answer (the reservation's commit and the marker's
        // fsync took 0.5 ms of every start).
        committed()
        return stored
    }

    /// Reports a stored row the bus could not have written, once.
    func report(_ table: String, _ key: String, _ reason: String) {
        guard skipped.reported.insert(table + " " + key).inserted else { return }
        skipped.report(table, key, reason)
    }

    /// The store lost changes that clients may have seen (``VersionMarker``): the counter continues above
    /// `ceiling`, the highest it may have reached, and every `since` from before now resyncs.
    func recoverLostTail(ceiling: Int64) {
        version = max(version, ceiling)
        raiseCeiling()
        history.floor = version
        writer.record(.setMeta(name: "historyFloor", value: historyFloor))
        committed()
    }

    /// Every `since` up to the current version resyncs: what the settings files say changed while the daemon was
    /// stopped. The change gets a version of its own, above every version a client may hold, and the history
    /// starts there, so that a client that had caught up (`since` = the version before the stop) resyncs too.
    func forgetHistory() {
        history.floor = nextVersion()
        writer.record(.setMeta(name: "historyFloor", value: historyFloor))
    }

    /// Replays from before `floor` resync: the history that answered them (the settings' part of it) was let go.
    func raiseHistoryFloor(to floor: Int64) {
        guard floor > historyFloor else { return }
        keepCountersForUndo()
        history.floor = floor
        writer.record(.setMeta(name: "historyFloor", value: historyFloor))
    }

    /// A version for a change that the settings made (a default or a lock that came or went).
    func nextSettingsVersion() -> Int64 {
        nextVersion()
    }

    /// The counter continues above `ceiling`, a ceiling recorded outside the store.
    func continueAbove(ceiling: Int64) {
        guard ceiling > version else { return }
        version = ceiling
        raiseCeiling()
        committed()
    }

    /// The next number of the daemon-wide version counter.
    private func nextVersion() -> Int64 {
        keepCountersForUndo()
        version += 1
        if version >= versionCeiling { raiseCeiling() }
        return version
    }

    /// Keeps the counters as they were before the first change not yet committed, for ``rollBack()``.
    @inline(__always)
    private func keepCountersForUndo() {
        if uncommitted.counters == nil {
            uncommitted.counters = (version, versionCeiling, historyFloor, writer.propertyCount)
        }
    }

    private func raiseCeiling() {
        versionCeiling = version + Self.versionBlock
        writer.record(.setMeta(name: "versionCeiling", value: versionCeiling))
    }

    /// Records, before a clean shutdown, that no version above the current one was handed out, so that the next
    /// start continues the counter without a gap.
    func finish() {
        versionCeiling = version
        writer.record(.setMeta(name: "versionCeiling", value: version))
    }

    // MARK: Changes

    /// Stores a value under `key` and queues its store writes; returns the change. `index` is the key's entry in
    /// ``entries``, if it has one.
    func set(
        key: PropertyKey,
        value: [UInt8],
        at index: [String: Entry].Index?,
        ephemeralOwner: Int?,
        origin: Origin,
        now: Int64
    ) -> ChangeEvent {
        let name = key.rawValue
        let newVersion = nextVersion()
        // A key set again right after itself (a value streamed to one key) keeps one place in `recent`: the order
        // of versions holds, and a replay wants only its last version.
        if let last = recent.indices.last, recent[last].name == name {
            recent[last].version = newVersion
        } else {
            recent.append((newVersion, name))
        }
        let old: [UInt8]?
        if let index {
            // Changed in place, through the dictionary's values: the entry is not looked up again.
            let previous = entries.values[index].replace(
                value: value, version: newVersion, modifiedUsec: now, origin: origin)
            old = previous.value
            undo.append(Undo(name: name, entry: previous, tombstone: nil))
            update(
                &entries.values[index], existed: true, name: name, value: value, version: newVersion, now: now,
                ephemeralOwner: ephemeralOwner, origin: origin)
        } else {
            old = nil
            var entry = Entry(
                value: value, version: newVersion, modifiedUsec: now, origin: origin, ephemeralOwner: nil,
                markedEphemeral: false)
            update(
                &entry, existed: false, name: name, value: value, version: newVersion, now: now,
                ephemeralOwner: ephemeralOwner, origin: origin)
            // A key has a tombstone only while it has no entry.
            let tombstone = tombstones.removeValue(forKey: name)
            if tombstone != nil {
                writer.record(.deleteTombstone(key: name))
            }
            undo.append(Undo(name: name, entry: nil, tombstone: tombstone))
            entries[name] = entry
        }
        return ChangeEvent(key: key, value: value, old: old, version: newVersion, origin: origin)
    }

    /// Gives `entry`, which already holds its new value, its new owner, and queues the store writes that follow;
    /// `existed` tells whether the entry was stored before this change. Touches no other entry.
    private func update(
        _ entry: inout Entry,
        existed: Bool,
        name: String,
        value: [UInt8],
        version: Int64,
        now: Int64,
        ephemeralOwner owner: Int?,
        origin: Origin
    ) {
        let previousOwner = entry.ephemeralOwner
        if let previousOwner, previousOwner != owner {
            removeEphemeralKey(name, of: previousOwner)
        }
        if let owner {
            if previousOwner != owner {
                ephemeralKeys[owner, default: []].insert(name)
            }
            if existed && previousOwner == nil {
                writer.record(.deleteProperty(key: name))
                writer.propertyCount -= 1
            }
            if !entry.markedEphemeral {
                entry.markedEphemeral = true
                writer.record(.markEphemeral(key: name))
            }
            entry.ephemeralOwner = owner
            entry.upsertPosition = -1
        } else {
            if entry.markedEphemeral {
                entry.markedEphemeral = false
                writer.record(.unmarkEphemeral(key: name))
            }
            if !existed || previousOwner != nil { writer.propertyCount += 1 }
            entry.ephemeralOwner = nil
            entry.upsertPosition = writer.recordUpsert(
                StoredProperty(key: name, value: value, version: version, modifiedUsec: now, origin: origin),
                replacing: entry.upsertPosition
            )
        }
    }

    private func removeEphemeralKey(_ name: String, of owner: Int) {
        guard let index = ephemeralKeys.index(forKey: owner) else { return }
        ephemeralKeys.values[index].remove(name)
        if ephemeralKeys.values[index].isEmpty { ephemeralKeys.remove(at: index) }
    }

    /// Deletes the property `name`, leaving a tombstone for `since` replays; returns the change.
    func delete(_ name: String, origin: Origin, now: Int64) -> ChangeEvent? {
        guard let entry = entries.removeValue(forKey: name) else { return nil }
        undo.append(Undo(name: name, entry: entry, tombstone: nil))
        let deletion = nextVersion()
        if let owner = entry.ephemeralOwner {
            removeEphemeralKey(name, of: owner)
        } else {
            writer.record(.deleteProperty(key: name))
            writer.propertyCount -= 1
        }
        if entry.markedEphemeral {
            writer.record(.unmarkEphemeral(key: name))
        }
        tombstones[name] = Tombstone(version: deletion, modifiedUsec: now, origin: origin)
        writer.record(
            .upsertTombstone(StoredTombstone(key: name, version: deletion, modifiedUsec: now, origin: origin))
        )
        pruneHistoryIfNeeded()
        return ChangeEvent(
            key: Self.trustedKey(name), value: nil, old: entry.value, version: deletion, origin: origin)
    }

    /// Deletes the ephemeral properties of `owner`, a connection that closed; returns the changes.
    func deleteEphemeral(of owner: Int, origin: Origin, now: Int64) -> [ChangeEvent] {
        guard let keys = ephemeralKeys[owner] else { return [] }
        return keys.sorted().compactMap { name in
            guard entries[name]?.ephemeralOwner == owner else { return nil }
            return delete(name, origin: origin, now: now)
        }
    }

    /// Forgets the oldest deletions beyond the history limit; replays from before them resync.
    private func pruneHistoryIfNeeded() {
        guard tombstones.count > historyLimit + max(1, historyLimit / 10) else { return }
        let sorted = tombstones.sorted { $0.value.version < $1.value.version }
        let drop = sorted.count - historyLimit
        for (key, tombstone) in sorted.prefix(drop) {
            undo.append(Undo(name: key, entry: nil, tombstone: tombstone))
            tombstones[key] = nil
            // Until the commit, the store still has the row of a key deleted in this tick.
            if tombstone.version > writer.storedVersion { uncommitted.deletedKeys.insert(key) }
        }
        history.floor = sorted[drop - 1].value.version
        writer.record(.pruneTombstones(upToVersion: historyFloor))
        writer.record(.setMeta(name: "historyFloor", value: historyFloor))
    }

    // MARK: Commit

    /// Changes since the last commit, which ``rollBack()`` would undo.
    var hasUncommittedChanges: Bool { uncommitted.counters != nil || !undo.isEmpty }

    /// The writer committed: what changed can no longer be undone. Past ``cachedEntryLimit`` entries, those the
    /// store holds as they are (not ephemeral) are let go.
    func committed() {
        uncommitted.counters = nil
        if !uncommitted.deletedKeys.isEmpty { uncommitted.deletedKeys = [] }
        if recent.count > 2 * Self.recentLimit { forgetRecent(keeping: Self.recentLimit) }
        if entries.count > Self.cachedEntryLimit { evictStoredEntries() }
        guard !undo.isEmpty else { return }
        undo.removeAll(keepingCapacity: undo.count <= 4096)
    }

    /// Puts the Sets the last clean stop kept before ``recent``, once, when they end where this run's counter
    /// started: nothing changed the store in between (any change would have raised the ceiling, and with it the
    /// counter a start continues from). Read when first needed, not at the start.
    func mergeSavedRecent() {
        guard !recentBounds.savedMerged else { return }
        recentBounds.savedMerged = true
        guard let saved = writer.storage.savedRecentSets(), saved.end == recentBounds.loadedVersion,
            saved.floor < recentFloor
        else { return }
        recent = saved.sets + recent
        recentBounds.floor = saved.floor
    }

    /// Keeps ``recent`` beside the store for the next start; at a clean stop, once everything is committed.
    func saveRecent() -> Bool {
        mergeSavedRecent()
        return writer.storage.saveRecentSets(RecentSets(floor: recentFloor, end: version, sets: recent))
    }

    /// Lets go of the oldest keys of ``recent``, keeping the last `count`: replays from before them read the store.
    func forgetRecent(keeping count: Int) {
        let drop = recent.count - count
        guard drop > 0 else { return }
        recentBounds.floor = recent[drop - 1].version
        recent.removeFirst(drop)
    }

    /// Lets go of every entry that the store holds as it is; the next call that needs one reads it again.
    func evictStoredEntries() {
        entries = entries.filter { $0.value.ephemeralOwner != nil }
    }

    /// The writer's commit failed: every change since the last commit is undone, in reverse order.
    func rollBack() {
        for step in undo.reversed() {
            if let owner = entries[step.name]?.ephemeralOwner { removeEphemeralKey(step.name, of: owner) }
            entries[step.name] = step.entry
            tombstones[step.name] = step.tombstone
            if let owner = step.entry?.ephemeralOwner { ephemeralKeys[owner, default: []].insert(step.name) }
        }
        if let counters = uncommitted.counters {
            while let last = recent.last, last.version > counters.version { recent.removeLast() }
            version = counters.version
            versionCeiling = counters.ceiling
            history.floor = counters.floor
            writer.propertyCount = counters.stored
        }
        committed()
    }
}
