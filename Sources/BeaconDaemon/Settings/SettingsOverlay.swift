import BeaconProtocol
import Synchronization

/// What the schemas and the lockdown files in force say about keys, compiled for the bus's lookups.
///
/// Immutable: a reload or a registration compiles a new one, and the bus compares the two to tell its watchers what
/// changed (``PropertiesService/apply(_:quietly:)``).
///
/// Precedence:
/// - Schemas: the first declaration of a key wins, in the order the sources are given (the user's data dir, then each
///   of `$XDG_DATA_DIRS`, each directory's files by name, then registrations by age). An exact key beats a pattern.
/// - Locks: the last lockdown file by name wins, so that `90-site.conf` overrides `10-vendor.conf`. An exact key beats
///   a pattern.
final class SettingsOverlay: Sendable {
    struct Schema {
        var pattern: KeyPattern
        var schema: JSONSchema
        /// Compact JSON text.
        var defaultValue: [UInt8]?
        var summary: String?
        var description: String?
        /// The file it came from, or `client N (COMMAND)` for a registration.
        var source: String
        var line: Int
        /// Declared in a file rather than registered by a client.
        var fromFile: Bool
    }

    struct Lock {
        var pattern: KeyPattern
        /// Compact JSON text; `nil` when the key is locked at its default.
        var forcedValue: [UInt8]?
        var file: String
        var line: Int
    }

    struct Problem: Hashable {
        var file: String
        var line: Int
        var problem: String
    }

    /// The schema and lock that apply to one key, as indices into ``schemas`` and ``locks``; -1 for none.
    struct Rule: Equatable {
        var schema: Int32 = -1
        var lock: Int32 = -1
        static let none = Rule()
        /// Not looked up: the receiver looks it up when it needs it.
        static let unknown = Rule(schema: -2, lock: -2)
    }

    /// The value a key shows, after defaults and locks.
    struct Effective: Equatable {
        var value: [UInt8]?
        var isDefault = false
        /// Index into ``locks``, -1 when not locked.
        var lock: Int32 = -1
        var flags: ChangeEvent.Flags {
            var flags: ChangeEvent.Flags = []
            if isDefault { flags.insert(.isDefault) }
            if lock >= 0 { flags.insert(.locked) }
            return flags
        }
    }

    /// A source of schema entries, in precedence order.
    struct SchemaSource {
        var name: String
        var fromFile: Bool
        var file: SchemaFile
    }

    struct LockdownSource {
        var path: String
        var file: LockdownFile
    }

    /// The last epoch given out. Overlays are made on the event loop, and `empty` on first use from any thread.
    private static let epochs = Atomic<UInt32>(0)

    let schemas: [Schema]
    let locks: [Lock]
    let problems: [Problem]
    let schemaSources: [SchemaSource]
    let lockdownSources: [LockdownSource]
    /// No schema and no lock: every lookup can be skipped.
    let isEmpty: Bool
    /// Told apart from every other overlay of this process; entries cache their ``Rule`` with it.
    let epoch: UInt32
    private let exactSchemas: [String: Int32]
    private let patternSchemas: [Int32]
    private let exactLocks: [String: Int32]
    private let patternLocks: [Int32]

    static let empty = SettingsOverlay(schemaSources: [], lockdownSources: [], problems: [])

    init(schemaSources: [SchemaSource], lockdownSources: [LockdownSource], problems: [Problem]) {
        // 0 means "not looked up" in an entry's cached rule: skipped after a wrap.
        var next = Self.epochs.wrappingAdd(1, ordering: .relaxed).newValue
        if next == 0 { next = Self.epochs.wrappingAdd(1, ordering: .relaxed).newValue }
        epoch = next
        self.schemaSources = schemaSources
        self.lockdownSources = lockdownSources
        var problems = problems
        var schemas: [Schema] = []
        var exactSchemas: [String: Int32] = [:]
        var patternSchemas: [Int32] = []
        var seenPatterns: Set<String> = []
        for source in schemaSources {
            for problem in source.file.problems {
                problems.append(Problem(file: source.name, line: problem.line, problem: problem.problem))
            }
            for entry in source.file.entries {
                var defaultValue: [UInt8]?
                if let value = entry.defaultValue {
                    var bytes: [UInt8] = []
                    value.encode(into: &bytes)
                    defaultValue = bytes
                }
                let index = Int32(schemas.count)
                if entry.pattern.isExact {
                    guard exactSchemas[entry.pattern.rawValue] == nil else { continue }
                    exactSchemas[entry.pattern.rawValue] = index
                } else {
                    guard seenPatterns.insert(entry.pattern.rawValue).inserted else { continue }
                    patternSchemas.append(index)
                }
                schemas.append(
                    Schema(
                        pattern: entry.pattern, schema: entry.schema, defaultValue: defaultValue,
                        summary: entry.summary, description: entry.description, source: source.name,
                        line: entry.line, fromFile: source.fromFile))
            }
        }
        var locks: [Lock] = []
        var exactLocks: [String: Int32] = [:]
        var patternLocks: [Int32] = []
        seenPatterns = []
        for source in lockdownSources.reversed() {
            for problem in source.file.problems {
                problems.append(Problem(file: source.path, line: problem.line, problem: problem.problem))
            }
            // Within a file, too, the last rule of a key wins.
            for rule in source.file.rules.reversed() {
                let index = Int32(locks.count)
                if rule.pattern.isExact {
                    guard exactLocks[rule.pattern.rawValue] == nil else { continue }
                    exactLocks[rule.pattern.rawValue] = index
                } else {
                    guard seenPatterns.insert(rule.pattern.rawValue).inserted else { continue }
                    patternLocks.append(index)
                }
                locks.append(
                    Lock(pattern: rule.pattern, forcedValue: rule.forcedValue, file: source.path, line: rule.line))
            }
        }
        self.schemas = schemas
        self.locks = locks
        self.problems = problems.sorted { ($0.file, $0.line) < ($1.file, $1.line) }
        self.exactSchemas = exactSchemas
        self.patternSchemas = patternSchemas
        self.exactLocks = exactLocks
        self.patternLocks = patternLocks
        isEmpty = schemas.isEmpty && locks.isEmpty
    }

    /// The rules that apply to `name`.
    func rule(for name: String) -> Rule {
        guard !isEmpty else { return .none }
        var rule = Rule()
        if let index = exactSchemas[name] {
            rule.schema = index
        } else if !patternSchemas.isEmpty {
            let key = PropertyTable.trustedKey(name)
            if let index = patternSchemas.first(where: { schemas[Int($0)].pattern.matches(key) }) {
                rule.schema = index
            }
        }
        if let index = exactLocks[name] {
            rule.lock = index
        } else if !patternLocks.isEmpty {
            let key = PropertyTable.trustedKey(name)
            if let index = patternLocks.first(where: { locks[Int($0)].pattern.matches(key) }) {
                rule.lock = index
            }
        }
        return rule
    }

    /// What `name` shows when `stored` is its stored value.
    func effective(stored: [UInt8]?, rule: Rule) -> Effective {
        let defaultValue = rule.schema >= 0 ? schemas[Int(rule.schema)].defaultValue : nil
        if rule.lock >= 0 {
            if let forced = locks[Int(rule.lock)].forcedValue {
                return Effective(value: forced, isDefault: false, lock: rule.lock)
            }
            // Locked at its default; a key without one keeps its stored value, read-only.
            if let defaultValue { return Effective(value: defaultValue, isDefault: true, lock: rule.lock) }
            return Effective(value: stored, isDefault: false, lock: rule.lock)
        }
        if let stored { return Effective(value: stored) }
        if let defaultValue { return Effective(value: defaultValue, isDefault: true) }
        return Effective()
    }

    /// The exact keys that have a value without being stored (a default, or a forced value).
    var keysWithValues: [String] {
        var keys: Set<String> = []
        for (name, index) in exactSchemas where schemas[Int(index)].defaultValue != nil { keys.insert(name) }
        for (name, index) in exactLocks where locks[Int(index)].forcedValue != nil { keys.insert(name) }
        return keys.sorted()
    }

    /// Every exact key a rule names.
    var exactKeys: Set<String> {
        Set(exactSchemas.keys).union(exactLocks.keys)
    }

    /// The lock patterns: a stored key they match may show another value.
    var lockPatterns: [KeyPattern] {
        patternLocks.map { locks[Int($0)].pattern }
    }

    /// A hash of what the files say, stable across runs (FNV-1a): a change while the daemon was stopped makes
    /// `since` replays from before it resync.
    var fingerprint: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ bytes: some Sequence<UInt8>) {
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            hash ^= 0xff
            hash = hash &* 0x100_0000_01b3
        }
        for schema in schemas where schema.fromFile {
            mix(schema.pattern.rawValue.utf8)
            mix(schema.defaultValue ?? [])
        }
        for lock in locks {
            mix(lock.pattern.rawValue.utf8)
            mix(lock.forcedValue ?? [0])
        }
        return Int64(bitPattern: hash)
    }
}
