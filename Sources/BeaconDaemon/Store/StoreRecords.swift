import BeaconProtocol

/// A persistent property as stored on disk.
struct StoredProperty: Sendable {
    var key: String
    /// The value's compact JSON text.
    var value: [UInt8]
    var version: Int64
    var modifiedUsec: Int64
    var origin: Origin
}

/// A deletion kept so that `since` can replay it.
struct StoredTombstone: Sendable {
    var key: String
    var version: Int64
    var modifiedUsec: Int64
    var origin: Origin
}

/// One write to the store, collected per event-loop tick and committed in one transaction.
enum StoreOperation: Sendable {
    case upsertProperty(StoredProperty)
    case deleteProperty(key: String)
    case upsertTombstone(StoredTombstone)
    case deleteTombstone(key: String)
    /// Records that an ephemeral property exists, so that a restart turns it into a tombstone.
    case markEphemeral(key: String)
    case unmarkEphemeral(key: String)
    case pruneTombstones(upToVersion: Int64)
    case setMeta(name: String, value: Int64)
}

/// A property row as read from the store; when its value is not JSON, `parses` is false and the value empty.
struct StoredRow: Sendable {
    var property: StoredProperty
    var parses: Bool
}

/// The keys set during a run, with their versions, kept at a clean stop for `since` replays after the next start
/// (``PropertyTable/recent``): every row changed after `floor` up to `end`, the last version of that run, is in
/// `sets`.
struct RecentSets: Sendable {
    var floor: Int64
    var end: Int64
    var sets: [(version: Int64, name: String)]
}

/// What a start reads from the store: everything but the properties.
struct StoreContents: Sendable {
    var tombstones: [StoredTombstone]
    /// Keys of ephemeral properties that existed when the daemon last stopped.
    var ephemeralKeys: [String]
    var meta: [String: Int64]
}
