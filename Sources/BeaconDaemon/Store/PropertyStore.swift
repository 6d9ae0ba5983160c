import BeaconConfiguration
import BeaconProtocol
import CSQLite
import Synchronization
import VarlinkServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// SQLite storage (WAL mode) of persistent properties, deletion tombstones and counters.
///
/// Writes are synchronous: the bus commits one transaction per event-loop tick and answers the calls of that
/// tick only after the commit returned. One connection, used under a lock.
final class PropertyStore: Sendable {
    enum Synchronous: String, Sendable {
        case normal
        case full
    }

    let path: String
    private let connection: Mutex<SQLiteConnection>
    /// Whether the integrity check was left for after the start (``checkIntegrityInBackground(_:)``).
    let checkDeferred: Bool
    /// What a start reads, read when the store was opened (so that damage there is found then, even when the
    /// check is deferred), until ``load()`` takes it.
    private let openedContents: Mutex<StoreContents?>

    /// The default of `store.checkAtStartMaxBytes`: a store up to this size is checked before the daemon serves
    /// (`PRAGMA quick_check` reads the whole file: 0.25 s for the 128 MB of a million keys on a warm cache,
    /// `Benchmarks/Bus/results/2026-11-28-quick-check-time.txt`, so about 30 ms at this size).
    static let checkAtStartMaxBytes = 16 << 20

    /// Opens the store at `path`, creating it when there is none. Its integrity is checked now when the file is at
    /// most `checkAtStartMaxBytes` long or its last check after a start failed; otherwise ``checkDeferred`` is
    /// true and the daemon checks it once it serves.
    init(path: String, synchronous: Synchronous, checkAtStartMaxBytes: Int = PropertyStore.checkAtStartMaxBytes) throws
    {
        self.path = path
        let directory = POSIX.parentDirectory(of: path)
        if !directory.isEmpty {
            try POSIX.createDirectories(directory, mode: 0o700)
        }
        var info = stat()
        let size = stat(path, &info) == 0 ? Int(info.st_size) : 0
        let failedBefore = access(Self.checkFailedPath(of: path), F_OK) == 0
        checkDeferred = size > checkAtStartMaxBytes && !failedBefore
        var connection = try SQLiteConnection(path: path)
        do {
            let journalMode = try connection.text("PRAGMA journal_mode = WAL")
            guard journalMode == "wal" else {
                throw StoreError(code: SQLITE_ERROR, message: "could not activate WAL mode at path: \(path)")
            }
            try connection.execute("PRAGMA synchronous = \(synchronous == .full ? "FULL" : "NORMAL")")
            // A damaged file is found now, not by the first query that reaches the damage.
            if !checkDeferred {
                if let damage = try Self.checkIntegrity(&connection) {
                    throw StoreError(code: SQLITE_CORRUPT, message: damage)
                }
                if failedBefore { unlink(Self.checkFailedPath(of: path)) }
            }
            // A store made or migrated by this version says so: its start skips parsing the schema (about a tenth
            // of a millisecond of a socket-activated start).
            if try connection.text("PRAGMA user_version") != String(Self.schemaVersion) {
                try connection.transaction { connection in
                    try connection.execute(Self.schema)
                    try Self.migrate(&connection)
                    try connection.execute("PRAGMA user_version = \(Self.schemaVersion)")
                }
            }
            openedContents = Mutex(try Self.readContents(&connection))
        } catch {
            _ = connection.close()
            throw error
        }
        self.connection = Mutex(connection)
    }

    deinit {
        _ = connection.withLock { $0.close() }
    }

    /// Opens the store at `path`; a file there that is not SQLite or fails the integrity check is moved aside,
    /// with its write-ahead log, to `PATH.damaged-USEC`, and an empty store is started. `setAside` is told the
    /// reason and the new path.
    static func openSettingAsideDamage(
        path: String,
        synchronous: Synchronous,
        checkAtStartMaxBytes: Int = PropertyStore.checkAtStartMaxBytes,
        setAside: (_ reason: String, _ movedTo: String) -> Void
    ) throws -> PropertyStore {
        do {
            return try PropertyStore(
                path: path, synchronous: synchronous, checkAtStartMaxBytes: checkAtStartMaxBytes)
        } catch let error as StoreError where error.isDamage {
            let target = path + ".damaged-\(WallClock.nowUsec())"
            for suffix in ["", "-wal", "-shm", Self.checkFailedSuffix] where access(path + suffix, F_OK) == 0 {
                guard rename(path + suffix, target + suffix) == 0 else {
                    throw StoreError(
                        code: error.code,
                        message:
                            "\(error.message); cannot move \(path + suffix) aside: \(String(cString: strerror(errno)))")
                }
            }
            setAside(error.description, target)
            return try PropertyStore(path: path, synchronous: synchronous)
        }
    }

    /// The file beside a store whose integrity check after a start failed: the next start checks it first (and
    /// sets it aside with the store).
    static func checkFailedPath(of path: String) -> String { path + checkFailedSuffix }
    private static let checkFailedSuffix = "-check-failed"

    /// What `PRAGMA quick_check` found wrong; `nil` when the store is sound.
    private static func checkIntegrity(_ connection: inout SQLiteConnection) throws -> String? {
        let check = try connection.text("PRAGMA quick_check")
        return check == "ok" ? nil : "integrity check failed: \(check ?? "no answer")"
    }

    /// What a check after the start found.
    enum IntegrityCheck: Sendable, Equatable {
        case sound
        /// The store is damaged; the next start checks it before serving and sets it aside.
        case damaged(String)
        /// The check itself could not run (not a sign of damage).
        case failed(String)
    }

    /// Checks the store's integrity on a thread of its own, through a read-only connection of its own (the
    /// write-ahead log lets it read beside the daemon's writes), and tells `done` on that thread. Damage is
    /// recorded beside the store (``checkFailedPath(of:)``) before `done` hears of it.
    func checkIntegrityInBackground(_ done: @escaping @Sendable (IntegrityCheck) -> Void) {
        let path = self.path
        let started = POSIX.startThread {
            var outcome = IntegrityCheck.sound
            do {
                var connection = try SQLiteConnection(path: path, readOnly: true)
                // The check reads every page once: a small cache is enough, and what it holds goes at the close.
                try connection.execute("PRAGMA cache_size = -512")
                if let damage = try Self.checkIntegrity(&connection) { outcome = .damaged(damage) }
                _ = connection.close()
            } catch let error as StoreError where error.isDamage {
                outcome = .damaged(error.description)
            } catch {
                outcome = .failed("\(error)")
            }
            if case .damaged = outcome {
                let fd = open(Self.checkFailedPath(of: path), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
                if fd >= 0 { Glibc.close(fd) }
            }
            done(outcome)
        }
        if !started { done(.failed("cannot start a thread for the check")) }
    }

    /// `PRAGMA user_version` of a store with the schema below: 0 before it was recorded, 2 with the `machine`
    /// columns, 3 with the count of properties (`propertyCount`) in `meta`.
    static let schemaVersion = 3

    private static let schema = """
        CREATE TABLE IF NOT EXISTS property (
            key TEXT PRIMARY KEY NOT NULL,
            value TEXT NOT NULL,
            version INTEGER NOT NULL,
            modified INTEGER NOT NULL,
            uid INTEGER NOT NULL,
            pid INTEGER NOT NULL,
            command TEXT,
            machine TEXT
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS tombstone (
            key TEXT PRIMARY KEY NOT NULL,
            version INTEGER NOT NULL,
            modified INTEGER NOT NULL,
            uid INTEGER NOT NULL,
            pid INTEGER NOT NULL,
            command TEXT,
            machine TEXT
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS tombstone_version ON tombstone(version);
        CREATE TABLE IF NOT EXISTS ephemeral (key TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)
            WITHOUT ROWID;
        """

    /// Brings a store written by an earlier version up to the schema above. Version 1 had no `machine` column,
    /// the machine of a change that came from another one through a provider (`origin.machine`).
    private static func migrate(_ connection: inout SQLiteConnection) throws {
        var hasMachine = false
        try connection.query("PRAGMA table_info(property)") { row in
            if row.text(1) == "machine" { hasMachine = true }
        }
        if !hasMachine {
            try connection.execute(
                "ALTER TABLE property ADD COLUMN machine TEXT; ALTER TABLE tombstone ADD COLUMN machine TEXT;")
        }
        // Version 3: a start no longer reads every row, so the count it took from them is kept in `meta`, and every
        // commit that changes it writes it (``StoreWriter``). Counted once here.
        try connection.execute(
            "INSERT OR IGNORE INTO meta (name, value) VALUES ('propertyCount', (SELECT count(*) FROM property))")
    }

    /// Reads what a start needs: the tombstones, the ephemeral keys and the counters; the properties are read when
    /// a call needs them (``property(_:)``, ``properties(from:below:_:)``).
    func load() throws -> StoreContents {
        if let contents = openedContents.withLock({ $0.take() }) { return contents }
        return try connection.withLock { try Self.readContents(&$0) }
    }

    /// The tombstones, ephemeral keys and counters.
    private static func readContents(_ connection: inout SQLiteConnection) throws -> StoreContents {
        try connection.transaction(immediate: false) { connection in
            var tombstones: [StoredTombstone] = []
            try connection.query("SELECT key, version, modified, uid, pid, command, machine FROM tombstone") {
                row in
                tombstones.append(
                    StoredTombstone(
                        key: row.text(0) ?? "",
                        version: row.int64(1),
                        modifiedUsec: row.int64(2),
                        origin: row.origin(3)
                    )
                )
            }
            var ephemeral: [String] = []
            try connection.query("SELECT key FROM ephemeral") { row in ephemeral.append(row.text(0) ?? "") }
            var meta: [String: Int64] = [:]
            try connection.query("SELECT name, value FROM meta") { row in meta[row.text(0) ?? ""] = row.int64(1) }
            return StoreContents(tombstones: tombstones, ephemeralKeys: ephemeral, meta: meta)
        }
    }

    /// The stored row of `key`, `nil` when there is none.
    func property(_ key: String) throws -> StoredRow? {
        try rows(.selectProperty, [.text(key)]).first
    }

    /// The rows whose keys are at least `lower` and, when `upper` is given, below it, in byte order.
    func properties(from lower: String, below upper: String?, _ body: (StoredRow) -> Void) throws {
        let rows =
            if let upper {
                try rows(.selectPropertyRange, [.text(lower), .text(upper)])
            } else {
                try rows(.selectPropertiesFrom, [.text(lower)])
            }
        rows.forEach(body)
    }

    /// The rows changed after `version`, in no order.
    func properties(changedAfter version: Int64, _ body: (StoredRow) -> Void) throws {
        try rows(.selectPropertiesChanged, [.int(version)]).forEach(body)
    }

    /// The property rows `statement` selects. Read under the lock and given to the caller after it: the connection
    /// cannot be lent to a caller's closure.
    private func rows(_ statement: SQLiteStatement, _ arguments: [SQLiteArgument]) throws -> [StoredRow] {
        try connection.withLock { connection in
            var rows: [StoredRow] = []
            try connection.select(statement, arguments) { rows.append(Self.propertyRow($0)) }
            return rows
        }
    }

    /// The version of `key`'s property or tombstone row (the higher, if both); `nil` when it has neither.
    func rowVersion(of key: String) throws -> Int64? {
        // Versions start at 1: 0 is no row.
        let version = try integer(.selectRowVersion, [.text(key), .text(key)])
        return version > 0 ? version : nil
    }

    /// The highest version of any property or tombstone row; reads every property row.
    func highestVersion() throws -> Int64 {
        try integer(.selectHighestVersion, [])
    }

    /// The integer that `statement` selects.
    private func integer(_ statement: SQLiteStatement, _ arguments: [SQLiteArgument]) throws -> Int64 {
        try connection.withLock { connection in
            var value: Int64 = 0
            try connection.select(statement, arguments) { value = $0.int64(0) }
            return value
        }
    }

    private static let valueLimits = JSONLimits(maxDepth: 512, maxBytes: Int.max)

    /// A property row of a query's result (the columns of ``SQLiteStatement/selectProperty``).
    private static func propertyRow(_ row: SQLiteRow) -> StoredRow {
        // The daemon stores values compact, as it sends them: those are checked and kept as they are; only a
        // value written otherwise (by hand, by another tool) is parsed and encoded again.
        let value = row.withBytes(1) { bytes -> [UInt8]? in
            guard let bytes else { return nil }
            if (try? JSONValue.isCompactEncoding(bytes, limits: valueLimits)) == true { return Array(bytes) }
            guard let parsed = try? JSONValue(parsing: bytes, limits: valueLimits) else { return nil }
            var value: [UInt8] = []
            parsed.encode(into: &value)
            return value
        }
        return StoredRow(
            property: StoredProperty(
                key: row.text(0) ?? "", value: value ?? [], version: row.int64(2), modifiedUsec: row.int64(3),
                origin: row.origin(4)),
            parses: value != nil)
    }

    /// Applies `operations` in one transaction.
    func commit(_ operations: [StoreOperation]) throws {
        guard !operations.isEmpty else { return }
        try connection.withLock { connection in
            try connection.transaction { connection in
                for operation in operations {
                    try Self.apply(operation, on: &connection)
                }
            }
        }
    }

    private static func apply(_ operation: StoreOperation, on connection: inout SQLiteConnection) throws {
        switch operation {
        case .upsertProperty(let property):
            try connection.run(
                .upsertProperty,
                .text(property.key), .utf8(property.value), .int(property.version), .int(property.modifiedUsec),
                .int(Int64(property.origin.uid)), .int(Int64(property.origin.pid)),
                property.origin.command.map { .text($0) } ?? .null, property.origin.machine.map { .text($0) } ?? .null
            )
        case .deleteProperty(let key):
            try connection.run(.deleteProperty, .text(key))
        case .upsertTombstone(let tombstone):
            try connection.run(
                .upsertTombstone,
                .text(tombstone.key), .int(tombstone.version), .int(tombstone.modifiedUsec),
                .int(Int64(tombstone.origin.uid)), .int(Int64(tombstone.origin.pid)),
                tombstone.origin.command.map { .text($0) } ?? .null, tombstone.origin.machine.map { .text($0) } ?? .null
            )
        case .deleteTombstone(let key):
            try connection.run(.deleteTombstone, .text(key))
        case .markEphemeral(let key):
            try connection.run(.markEphemeral, .text(key))
        case .unmarkEphemeral(let key):
            try connection.run(.unmarkEphemeral, .text(key))
        case .pruneTombstones(let version):
            try connection.run(.pruneTombstones, .int(version))
        case .setMeta(let name, let value):
            try connection.run(.setMeta, .text(name), .int(value))
        }
    }

    /// The text of `PRAGMA name` on the store's connection, e.g. `journal_mode` or `synchronous`.
    func pragma(_ name: String) throws -> String? {
        try connection.withLock { connection in try connection.text("PRAGMA \(name)") }
    }

    /// Closes the database; throws when SQLite reports that closing failed.
    func close() throws(StoreError) {
        if let failure = connection.withLock({ $0.close() }) { throw failure }
    }
}

/// A failed SQLite call: the result code, SQLite's message and the statement, if any.
struct StoreError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var sql: String?

    var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " - while executing `\($0)`" } ?? "")
    }

    /// The file is not an SQLite database, or a damaged one.
    var isDamage: Bool {
        let primary = code & 0xff
        return primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT
    }
}
