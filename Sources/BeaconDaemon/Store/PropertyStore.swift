import BeaconProtocol
import GRDB

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

/// What the store holds when the daemon starts.
struct StoreContents: Sendable {
    var properties: [StoredProperty]
    var tombstones: [StoredTombstone]
    /// Keys of ephemeral properties that existed when the daemon last stopped.
    var ephemeralKeys: [String]
    var meta: [String: Int64]
}

/// SQLite storage (WAL mode) of persistent properties, deletion tombstones and counters.
///
/// Writes are synchronous: the bus commits one transaction per event-loop tick and answers the calls of that
/// tick only after the commit returned.
final class PropertyStore: Sendable {
    enum Synchronous: String, Sendable {
        case normal
        case full
    }

    let path: String
    private let queue: DatabaseQueue

    init(path: String, synchronous: Synchronous) throws {
        self.path = path
        let directory = POSIX.parentDirectory(of: path)
        if !directory.isEmpty {
            try POSIX.createDirectories(directory, mode: 0o700)
        }
        var configuration = Configuration()
        configuration.label = "beacon.store"
        let pragma = "PRAGMA synchronous = \(synchronous == .full ? "FULL" : "NORMAL")"
        configuration.prepareDatabase { db in
            // WAL is set here rather than with `Configuration.journalMode`, whose set-up runs after this closure
            // and resets `synchronous` to NORMAL (and creates and drops a table that only a DatabasePool needs).
            let journalMode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            guard journalMode == "wal" else {
                throw DatabaseError(message: "could not activate WAL mode at path: \(path)")
            }
            try db.execute(sql: pragma)
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        try migrate()
    }

    private func migrate() throws {
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS property (
                        key TEXT PRIMARY KEY NOT NULL,
                        value TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        modified INTEGER NOT NULL,
                        uid INTEGER NOT NULL,
                        pid INTEGER NOT NULL,
                        command TEXT
                    ) WITHOUT ROWID;
                    CREATE TABLE IF NOT EXISTS tombstone (
                        key TEXT PRIMARY KEY NOT NULL,
                        version INTEGER NOT NULL,
                        modified INTEGER NOT NULL,
                        uid INTEGER NOT NULL,
                        pid INTEGER NOT NULL,
                        command TEXT
                    ) WITHOUT ROWID;
                    CREATE INDEX IF NOT EXISTS tombstone_version ON tombstone(version);
                    CREATE TABLE IF NOT EXISTS ephemeral (key TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                    CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)
                        WITHOUT ROWID;
                    """
            )
        }
    }

    /// Reads everything. Values that no longer parse are skipped and reported through `invalid`.
    func load(invalid: (String) -> Void) throws -> StoreContents {
        let limits = JSONLimits(maxDepth: 512, maxBytes: Int.max)
        let result = try queue.read { db in
            var properties: [StoredProperty] = []
            var broken: [String] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT key, value, version, modified, uid, pid, command FROM property")
            {
                let key: String = row[0]
                let text: String = row[1]
                guard let parsed = try? JSONValue(parsing: text, limits: limits) else {
                    broken.append(key)
                    continue
                }
                var value: [UInt8] = []
                parsed.encode(into: &value)
                properties.append(
                    StoredProperty(
                        key: key,
                        value: value,
                        version: row[2],
                        modifiedUsec: row[3],
                        origin: Origin(uid: UInt32(truncatingIfNeeded: row[4] as Int64), pid: row[5], command: row[6])
                    )
                )
            }
            let tombstones = try Row.fetchAll(
                db,
                sql: "SELECT key, version, modified, uid, pid, command FROM tombstone"
            ).map { row in
                StoredTombstone(
                    key: row[0],
                    version: row[1],
                    modifiedUsec: row[2],
                    origin: Origin(uid: UInt32(truncatingIfNeeded: row[3] as Int64), pid: row[4], command: row[5])
                )
            }
            let ephemeral = try String.fetchAll(db, sql: "SELECT key FROM ephemeral")
            var meta: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, value FROM meta") {
                meta[row[0]] = row[1]
            }
            return (
                StoreContents(properties: properties, tombstones: tombstones, ephemeralKeys: ephemeral, meta: meta),
                broken
            )
        }
        for key in result.1 { invalid(key) }
        return result.0
    }

    /// Applies `operations` in one transaction.
    func commit(_ operations: [StoreOperation]) throws {
        guard !operations.isEmpty else { return }
        try queue.write { db in
            for operation in operations {
                switch operation {
                case .upsertProperty(let property):
                    let statement = try db.cachedStatement(
                        sql: """
                            INSERT INTO property (key, value, version, modified, uid, pid, command)
                            VALUES (?, ?, ?, ?, ?, ?, ?)
                            ON CONFLICT(key) DO UPDATE SET value = excluded.value, version = excluded.version,
                                modified = excluded.modified, uid = excluded.uid, pid = excluded.pid,
                                command = excluded.command
                            """
                    )
                    try statement.execute(arguments: [
                        property.key, String(decoding: property.value, as: UTF8.self), property.version,
                        property.modifiedUsec,
                        Int64(property.origin.uid), Int64(property.origin.pid), property.origin.command,
                    ])
                case .deleteProperty(let key):
                    try db.cachedStatement(sql: "DELETE FROM property WHERE key = ?").execute(arguments: [key])
                case .upsertTombstone(let tombstone):
                    let statement = try db.cachedStatement(
                        sql: """
                            INSERT INTO tombstone (key, version, modified, uid, pid, command)
                            VALUES (?, ?, ?, ?, ?, ?)
                            ON CONFLICT(key) DO UPDATE SET version = excluded.version, modified = excluded.modified,
                                uid = excluded.uid, pid = excluded.pid, command = excluded.command
                            """
                    )
                    try statement.execute(arguments: [
                        tombstone.key, tombstone.version, tombstone.modifiedUsec, Int64(tombstone.origin.uid),
                        Int64(tombstone.origin.pid), tombstone.origin.command,
                    ])
                case .deleteTombstone(let key):
                    try db.cachedStatement(sql: "DELETE FROM tombstone WHERE key = ?").execute(arguments: [key])
                case .markEphemeral(let key):
                    try db.cachedStatement(sql: "INSERT OR IGNORE INTO ephemeral (key) VALUES (?)")
                        .execute(arguments: [key])
                case .unmarkEphemeral(let key):
                    try db.cachedStatement(sql: "DELETE FROM ephemeral WHERE key = ?").execute(arguments: [key])
                case .pruneTombstones(let version):
                    try db.cachedStatement(sql: "DELETE FROM tombstone WHERE version <= ?")
                        .execute(arguments: [version])
                case .setMeta(let name, let value):
                    try db.cachedStatement(
                        sql:
                            "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value"
                    ).execute(arguments: [name, value])
                }
            }
        }
    }

    /// The text of `PRAGMA name` on the store's connection, e.g. `journal_mode` or `synchronous`.
    func pragma(_ name: String) throws -> String? {
        try queue.read { db in try String.fetchOne(db, sql: "PRAGMA \(name)") }
    }

    func close() throws {
        try queue.close()
    }
}
