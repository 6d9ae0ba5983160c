/// Where the bus keeps its state: ``PropertyStore`` (SQLite) in the daemon.
protocol PropertyStorage: AnyObject {
    /// Where the store is, for `Status` and the log.
    var path: String { get }
    /// Everything stored; `invalid` is called with the key of each stored value that does not parse.
    func load(invalid: (String) -> Void) throws -> StoreContents
    /// Applies `operations` in one transaction: all of them, or none when it throws.
    func commit(_ operations: [StoreOperation]) throws
}

extension PropertyStore: PropertyStorage {}

/// The store writes of the current tick, committed in one transaction at its end.
final class StoreWriter {
    let storage: any PropertyStorage
    // Written on every Set; used on the event loop only, and no access spans a call that could reach it again.
    @exclusivity(unchecked) private(set) var pending: [StoreOperation] = []
    /// How many queued operations were committed (or discarded) and removed from the front of ``pending``.
    @exclusivity(unchecked) private(set) var settledCount = 0
    /// The highest version of a property or tombstone row committed so far.
    private(set) var storedVersion: Int64 = 0

    init(storage: any PropertyStorage) {
        self.storage = storage
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

    /// Commits what is queued in one transaction. On failure nothing queued is kept: the caller undoes what it
    /// described.
    func commit() throws {
        guard !pending.isEmpty else { return }
        defer {
            settledCount += pending.count
            pending.removeAll(keepingCapacity: pending.count <= 4096)
        }
        try storage.commit(pending)
        for operation in pending {
            switch operation {
            case .upsertProperty(let property): storedVersion = max(storedVersion, property.version)
            case .upsertTombstone(let tombstone): storedVersion = max(storedVersion, tombstone.version)
            default: break
            }
        }
    }

    /// The store held rows up to `version` when it was opened.
    func opened(storedVersion version: Int64) {
        storedVersion = max(storedVersion, version)
    }
}
