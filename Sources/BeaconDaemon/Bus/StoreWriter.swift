/// Where the bus keeps its state: ``PropertyStore`` (SQLite) in the daemon.
protocol PropertyStorage: AnyObject {
    /// Where the store is, for `Status` and the log.
    var path: String { get }
    /// What a start reads: everything but the properties, which are read when needed.
    func load() throws -> StoreContents
    /// The stored row of `key`, `nil` when there is none.
    func property(_ key: String) throws -> StoredRow?
    /// The rows whose keys are at least `lower` and, when `upper` is given, below it.
    func properties(from lower: String, below upper: String?, _ body: (StoredRow) -> Void) throws
    /// The rows changed after `version`.
    func properties(changedAfter version: Int64, _ body: (StoredRow) -> Void) throws
    /// The version of `key`'s property or tombstone row (the higher, if both); `nil` when it has neither.
    func rowVersion(of key: String) throws -> Int64?
    /// The highest version of any property or tombstone row; reads every row.
    func highestVersion() throws -> Int64
    /// Keeps `sets` beside the store for the next start; false when they could not be written.
    func saveRecentSets(_ sets: RecentSets) -> Bool
    /// The Sets kept by the last clean stop, if any.
    func savedRecentSets() -> RecentSets?
    /// Applies `operations` in one transaction: all of them, or none when it throws.
    func commit(_ operations: [StoreOperation]) throws
}

extension PropertyStore: PropertyStorage {}

/// The store writes of the current tick, committed in one transaction at its end.
final class StoreWriter {
    let storage: any PropertyStorage
    /// The ceiling and highest stored version, kept beside the store; `nil` when there is none.
    let marker: VersionMarker?
    // Written on every Set.
    private(set) var pending: [StoreOperation] = []
    /// How many queued operations were committed (or discarded) and removed from the front of ``pending``.
    private(set) var settledCount = 0
    /// The highest version of a property or tombstone row committed so far, and that row's key.
    private(set) var storedVersion: Int64 = 0
    private(set) var storedKey: String?
    /// How many property rows the store holds once what is queued is committed; ``PropertyTable`` keeps it.
    var propertyCount = 0
    private var committedPropertyCount = 0

    init(storage: any PropertyStorage, marker: VersionMarker? = nil) {
        self.storage = storage
        self.marker = marker
    }

    var hasPending: Bool { !pending.isEmpty }

    /// Queues `operation`.
    func record(_ operation: StoreOperation) {
        pending.append(operation)
    }

    /// Queues the upsert of `property`'s row; returns its position, counted over every operation queued since
    /// the start.
    ///
    /// When the row's upsert at `earlier` is still pending, the new row takes its place instead: both are in the
    /// same transaction, and no other write to that row came between them (a deletion replaces or removes the
    /// entry, and with it the position).
    func recordUpsert(_ property: StoredProperty, replacing earlier: Int) -> Int {
        if earlier >= settledCount {
            pending[earlier - settledCount] = .upsertProperty(property)
            return earlier
        }
        pending.append(.upsertProperty(property))
        return settledCount + pending.count - 1
    }

    /// Commits what is queued in one transaction, with the count of property rows a start reads when it changed.
    /// On failure nothing queued is kept: the caller undoes what it described.
    func commit() throws {
        if propertyCount != committedPropertyCount {
            pending.append(.setMeta(name: "propertyCount", value: Int64(propertyCount)))
        }
        guard !pending.isEmpty else { return }
        defer {
            settledCount += pending.count
            pending.removeAll(keepingCapacity: pending.count <= 4096)
        }
        try storage.commit(pending)
        committedPropertyCount = propertyCount
        for operation in pending {
            switch operation {
            case .upsertProperty(let property) where property.version > storedVersion:
                storedVersion = property.version
                storedKey = property.key
            case .upsertTombstone(let tombstone) where tombstone.version > storedVersion:
                storedVersion = tombstone.version
                storedKey = tombstone.key
            default: break
            }
        }
    }

    /// The store held rows up to `version` (the row of `key`) when it was opened.
    func opened(storedVersion version: Int64, key: String? = nil) {
        guard version > storedVersion else { return }
        storedVersion = version
        storedKey = key
    }

    /// The store held `count` property rows when it was opened.
    func opened(propertyCount count: Int) {
        propertyCount = count
        committedPropertyCount = count
    }
}
