import BeaconProtocol

extension PropertyTable {
    var historyLimit: Int {
        get { history.limit }
        set { history.limit = newValue }
    }
    /// Versions up to this one may have been seen by clients without surviving; replays from before it resync.
    var historyFloor: Int64 { history.floor }
    /// Every stored row changed after this version was set since the start, and is in ``recent``.
    var recentFloor: Int64 { recentBounds.floor }
    /// Keys deleted since the last commit whose tombstone was already let go (``pruneHistoryIfNeeded()``): the store
    /// still has their rows until the commit.
    var deletedBeforeCommit: Set<String> { uncommitted.deletedKeys }

    struct Entry {
        var value: [UInt8]
        var version: Int64
        var modifiedUsec: Int64
        var origin: Origin
        /// The connection that owns the property when it is ephemeral.
        var ephemeralOwner: Int?
        /// Whether the store knows the key as ephemeral.
        var markedEphemeral: Bool
        /// The position of the pending upsert that writes this entry's row (see ``StoreWriter/recordUpsert``); it
        /// is pending while not below ``StoreWriter/settledCount``.
        var upsertPosition = -1
        /// The reply to a Get of this entry, encoded by the first Get when short (``cachedGetReplyLimit``). Every
        /// change of the entry clears it, so it cannot describe an older state.
        var getReply: [UInt8]?
        /// The settings rules of this key, valid while ``ruleEpoch`` is the overlay's epoch (0: not looked up).
        var ruleEpoch: UInt32 = 0
        var rule = SettingsOverlay.Rule.none

        /// The cached settings rule when it was looked up under the overlay of `epoch`. Mutating, like
        /// ``holds(_:ownedBy:)``, to be reached in place.
        mutating func cachedRule(epoch: UInt32) -> SettingsOverlay.Rule? { ruleEpoch == epoch ? rule : nil }

        /// The cached reply to a Get. Mutating, like ``holds(_:ownedBy:)``, to be reached in place: a read through
        /// the dictionary's values would copy the whole entry out.
        mutating func cachedGetReply() -> [UInt8]? {
            getReply
        }

        /// Whether the entry holds `value` (the same compact text) with `owner` as its ephemeral owner. Mutating
        /// only so that a call through the table's dictionary reaches the entry in place instead of copying it out.
        mutating func holds(_ value: [UInt8], ownedBy owner: Int?) -> Bool {
            ephemeralOwner == owner && BusNames.sameValue(self.value, value)
        }

        /// Gives the entry a new value, version, time and origin (and no cached Get reply), keeping its owner, its
        /// store bookkeeping and its cached rule; returns the entry as it was. The previous state is moved out
        /// whole: copying it for the undo record, then overwriting its fields, cost every Set a dozen reference
        /// count operations.
        mutating func replace(value: [UInt8], version: Int64, modifiedUsec: Int64, origin: Origin) -> Entry {
            var next = Entry(
                value: value, version: version, modifiedUsec: modifiedUsec, origin: origin,
                ephemeralOwner: ephemeralOwner, markedEphemeral: markedEphemeral, upsertPosition: upsertPosition,
                getReply: nil, ruleEpoch: ruleEpoch, rule: rule)
            swap(&self, &next)
            return next
        }
    }

    struct Tombstone {
        var version: Int64
        var modifiedUsec: Int64
        var origin: Origin
    }

    /// The state of one key before the first change not yet committed.
    struct Undo {
        var name: String
        var entry: Entry?
        var tombstone: Tombstone?
    }

    /// How many deletions and settings changes are kept for `since` replays (`store.historyLimit`), and the
    /// version up to which clients may have seen changes that did not survive: replays from before it resync.
    struct History {
        var limit: Int
        var floor: Int64 = 0
    }

    /// Rows the bus could not have written: whom to tell (the table, the key, why), and those told of already.
    struct SkippedRows {
        var report: (_ table: String, _ key: String, _ reason: String) -> Void = { _, _, _ in }
        var reported: Set<String> = []
    }

    /// What the changes not yet committed changed besides their ``Undo`` records.
    struct Uncommitted {
        /// The counters before the first of them.
        var counters: (version: Int64, ceiling: Int64, floor: Int64, stored: Int)?
        /// Keys they deleted whose tombstone was already let go: the store has their rows until the commit.
        var deletedKeys: Set<String> = []
    }

    /// What ``PropertyTable/recent`` covers: every stored row changed after `floor` is in it. `loadedVersion` is
    /// where the counter stood when the store was loaded, and `savedMerged` whether the Sets the last clean stop
    /// kept were looked at (``PropertyTable/mergeSavedRecent()``).
    struct RecentBounds {
        var floor: Int64 = 0
        var loadedVersion: Int64 = 0
        var savedMerged = false
    }
}
