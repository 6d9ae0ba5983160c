import BeaconProtocol
import CSQLite

/// A value bound to a statement's parameter.
enum SQLiteArgument {
    case null
    case int(Int64)
    case text(String)
    /// Text given as its UTF-8 bytes.
    case utf8([UInt8])
}

/// The statements of the store's writes and of its reads while serving, each prepared once per connection.
///
/// The upserts replace the whole row (`INSERT OR REPLACE`: every column is given, and no column has a default, a
/// trigger or a foreign key): cheaper for SQLite than `ON CONFLICT … DO UPDATE`, with the same result.
enum SQLiteStatement: Int, CaseIterable {
    case upsertProperty
    case deleteProperty
    case upsertTombstone
    case deleteTombstone
    case markEphemeral
    case unmarkEphemeral
    case pruneTombstones
    case setMeta
    case selectProperty
    case selectPropertyRange
    case selectPropertiesFrom
    case selectPropertiesChanged
    case selectRowVersion
    case selectHighestVersion

    /// The columns of a property row, in the order ``PropertyStore`` reads them.
    private static let propertyColumns = "key, value, version, modified, uid, pid, command, machine"

    var sql: String {
        switch self {
        case .upsertProperty:
            """
            INSERT OR REPLACE INTO property (key, value, version, modified, uid, pid, command, machine)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        case .deleteProperty:
            "DELETE FROM property WHERE key = ?"
        case .upsertTombstone:
            """
            INSERT OR REPLACE INTO tombstone (key, version, modified, uid, pid, command, machine)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """
        case .deleteTombstone:
            "DELETE FROM tombstone WHERE key = ?"
        case .markEphemeral:
            "INSERT OR IGNORE INTO ephemeral (key) VALUES (?)"
        case .unmarkEphemeral:
            "DELETE FROM ephemeral WHERE key = ?"
        case .pruneTombstones:
            "DELETE FROM tombstone WHERE version <= ?"
        case .setMeta:
            "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)"
        case .selectProperty:
            "SELECT \(Self.propertyColumns) FROM property WHERE key = ?"
        case .selectPropertyRange:
            "SELECT \(Self.propertyColumns) FROM property WHERE key >= ? AND key < ?"
        case .selectPropertiesFrom:
            "SELECT \(Self.propertyColumns) FROM property WHERE key >= ?"
        case .selectPropertiesChanged:
            "SELECT \(Self.propertyColumns) FROM property WHERE version > ?"
        case .selectHighestVersion:
            """
            SELECT max((SELECT coalesce(max(version), 0) FROM property),
                (SELECT coalesce(max(version), 0) FROM tombstone))
            """
        case .selectRowVersion:
            """
            SELECT max(coalesce((SELECT version FROM property WHERE key = ?), 0),
                coalesce((SELECT version FROM tombstone WHERE key = ?), 0))
            """
        }
    }
}

/// One row of a query's result, valid while the query's body runs.
struct SQLiteRow {
    let statement: OpaquePointer

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(statement, column)
    }

    /// The column's text; `nil` for NULL.
    func text(_ column: Int32) -> String? {
        withBytes(column) { bytes in bytes.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// Calls `body` with the column's text as UTF-8 bytes, `nil` for NULL.
    func withBytes<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer?) -> T) -> T {
        guard let text = sqlite3_column_text(statement, column) else {
            // NULL, or an empty text or blob, which has no pointer.
            let isNull = sqlite3_column_type(statement, column) == SQLITE_NULL
            return body(isNull ? nil : UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return body(UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column))))
    }

    /// The `uid, pid, command` columns starting at `column`.
    func origin(_ column: Int32) -> Origin {
        Origin(
            uid: UInt32(truncatingIfNeeded: int64(column)),
            pid: Int32(truncatingIfNeeded: int64(column + 1)),
            command: text(column + 2),
            machine: text(column + 3)
        )
    }
}

/// An SQLite connection and its prepared statements.
struct SQLiteConnection {
    private var handle: OpaquePointer?
    /// The prepared statements, indexed by ``SQLiteStatement``'s raw value.
    private var statements = [OpaquePointer?](repeating: nil, count: SQLiteStatement.allCases.count)

    /// Opens (with `readOnly`, without creating) the database at `path`.
    init(path: String, readOnly: Bool = false) throws {
        var handle: OpaquePointer?
        let mode = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        let code = sqlite3_open_v2(path, &handle, mode | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close(handle)
            throw StoreError(code: code, message: "\(message) (\(path))")
        }
        self.handle = handle
    }

    /// Finalizes the statements and closes the connection; later calls fail.
    /// Finalizes the cached statements and closes the connection; returns SQLite's error when that fails.
    mutating func close() -> StoreError? {
        for statement in statements { sqlite3_finalize(statement) }
        statements = [OpaquePointer?](repeating: nil, count: SQLiteStatement.allCases.count)
        guard let handle else { return nil }
        let code = sqlite3_close(handle)
        let failure = code == SQLITE_OK ? nil : error(code, nil)
        self.handle = nil
        return failure
    }

    private func open() throws(StoreError) -> OpaquePointer {
        guard let handle else { throw StoreError(code: SQLITE_MISUSE, message: "the store is closed") }
        return handle
    }

    private func error(_ code: Int32, _ sql: String?) -> StoreError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return StoreError(code: code, message: message, sql: sql)
    }

    /// Runs `sql`, which may hold several statements; rows are ignored.
    func execute(_ sql: String) throws(StoreError) {
        let handle = try open()
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(message)
            throw StoreError(code: code, message: text, sql: sql)
        }
    }

    /// Runs `body` in a transaction (immediate: holding the write lock from the start), committed if it returns,
    /// rolled back if it throws.
    mutating func transaction<T>(
        immediate: Bool = true,
        _ body: (inout SQLiteConnection) throws -> T
    ) throws -> T {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        do {
            let result = try body(&self)
            try execute("COMMIT")
            return result
        } catch {
            if let handle, sqlite3_get_autocommit(handle) == 0 {
                try? execute("ROLLBACK")
            }
            throw error
        }
    }

    /// The first column of the first row of `sql`, as text.
    func text(_ sql: String) throws(StoreError) -> String? {
        var result: String?
        var first = true
        try query(sql) { row in
            if first { result = row.text(0) }
            first = false
        }
        return result
    }

    /// Runs the query `sql`, calling `body` for each row.
    func query(_ sql: String, _ body: (SQLiteRow) throws(StoreError) -> Void) throws(StoreError) {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw error(code, sql) }
            try body(SQLiteRow(statement: statement))
        }
    }

    /// `statement`, prepared the first time it is asked for on this connection.
    private mutating func prepared(_ statement: SQLiteStatement) throws(StoreError) -> OpaquePointer {
        if let cached = statements[statement.rawValue] { return cached }
        let prepared = try prepare(statement.sql)
        statements[statement.rawValue] = prepared
        return prepared
    }

    /// Runs `statement` with `arguments`, preparing it once per connection.
    mutating func run(_ statement: SQLiteStatement, _ arguments: SQLiteArgument...) throws(StoreError) {
        let prepared = try prepared(statement)
        let code = arguments.withUnsafeBufferPointer { arguments in
            Self.bindAndRun(prepared, arguments[...], row: nil)
        }
        guard code == SQLITE_DONE else { throw error(code, statement.sql) }
    }

    /// Runs the query `statement` with `arguments`, preparing it once per connection, and calls `row` for each row
    /// of its result, in the order SQLite gives them.
    mutating func select(
        _ statement: SQLiteStatement, _ arguments: [SQLiteArgument], row: (SQLiteRow) -> Void
    ) throws(StoreError) {
        let prepared = try prepared(statement)
        let code = withoutActuallyEscaping(row) { row in
            arguments.withUnsafeBufferPointer { arguments in
                Self.bindAndRun(prepared, arguments[...], row: row)
            }
        }
        guard code == SQLITE_DONE else { throw error(code, statement.sql) }
    }

    /// Binds `arguments` to the parameters from the first of them on, then steps `statement` through its rows
    /// (calling `row` with each, when given), resets it and clears its bindings; returns `SQLITE_DONE`, or the code
    /// of the call that failed.
    ///
    /// Text is bound without a copy (`SQLITE_STATIC`): it is read in place by the steps, which run while the
    /// bytes are borrowed, and the bindings are cleared before the borrow ends.
    private static func bindAndRun(
        _ statement: OpaquePointer,
        _ arguments: Slice<UnsafeBufferPointer<SQLiteArgument>>,
        row: ((SQLiteRow) -> Void)?
    ) -> Int32 {
        guard let argument = arguments.first else {
            var code = sqlite3_step(statement)
            while code == SQLITE_ROW {
                row?(SQLiteRow(statement: statement))
                code = sqlite3_step(statement)
            }
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            return code
        }
        let index = Int32(arguments.startIndex + 1)
        let rest = arguments.dropFirst()
        let code: Int32
        switch argument {
        case .null:
            code = sqlite3_bind_null(statement, index)
        case .int(let value):
            code = sqlite3_bind_int64(statement, index, value)
        case .text(var value):
            return value.withUTF8 { utf8 in
                let code = bind(UnsafeRawBufferPointer(utf8), to: statement, at: index)
                return code == SQLITE_OK ? bindAndRun(statement, rest, row: row) : failed(statement, code)
            }
        case .utf8(let bytes):
            return bytes.withUnsafeBytes { bytes in
                let code = bind(bytes, to: statement, at: index)
                return code == SQLITE_OK ? bindAndRun(statement, rest, row: row) : failed(statement, code)
            }
        }
        return code == SQLITE_OK ? bindAndRun(statement, rest, row: row) : failed(statement, code)
    }

    /// Clears what was bound before a binding failed with `code`; returns `code`.
    private static func failed(_ statement: OpaquePointer, _ code: Int32) -> Int32 {
        sqlite3_clear_bindings(statement)
        return code
    }

    /// Binds UTF-8 text that stays valid and unchanged until the binding is cleared (`SQLITE_STATIC`).
    private static func bind(_ text: UnsafeRawBufferPointer, to statement: OpaquePointer, at index: Int32) -> Int32 {
        guard let base = text.baseAddress, !text.isEmpty else {
            // The literal's pointer lives only during the call: SQLITE_TRANSIENT, which copies it.
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            return sqlite3_bind_text(statement, index, "", 0, transient)
        }
        // No destructor: SQLITE_STATIC, a macro Swift does not import.
        let characters = base.assumingMemoryBound(to: CChar.self)
        return sqlite3_bind_text(statement, index, characters, Int32(text.count), nil)
    }

    private func prepare(_ sql: String) throws(StoreError) -> OpaquePointer {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(try open(), sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code, sql) }
        return statement
    }
}
