import BeaconProtocol

/// Everything the daemon knows of one key: `io.beacon.Settings.Describe`.
public struct SettingDescription: Sendable, Hashable {
    public var key: String
    /// What a Get shows: the stored value, the default, or a locked value; `nil` when it shows nothing.
    public var value: JSONValue?
    /// Whether ``value`` is the default.
    public var isDefault: Bool
    /// Whether a value is stored, and its version (0 when none).
    public var isSet: Bool
    public var version: Int64
    /// The stored value when a lock shows another one.
    public var storedValue: JSONValue?
    public var isEphemeral: Bool
    /// The declaration that applies, when a schema declares the key.
    public var schema: Declaration?
    /// The lockdown rule that locks the key.
    public var lock: BeaconLock?

    /// A schema's declaration of the key.
    public struct Declaration: Sendable, Hashable {
        /// A summary of the type, for example `integer 6...72`.
        public var type: String
        /// The schema itself: a JSON Schema object.
        public var schema: JSONValue?
        /// The key or pattern that matched.
        public var pattern: String?
        public var defaultValue: JSONValue?
        public var summary: String?
        public var description: String?
        /// The schema file, or the registering client.
        public var source: String?
        public var line: Int?
    }

    init(parsing reply: [String: JSONValue]) throws(BeaconError) {
        let reader = ReplyReader(reply, "Describe reply")
        key = try reader.string("key")
        value = reader.value("value")
        isDefault = reader.bool("default", default: false)
        isSet = reader.bool("set", default: false)
        version = try reader.int("version")
        storedValue = reader.value("storedValue")
        isEphemeral = reader.bool("ephemeral", default: false)
        schema = reader.optionalString("type").map { type in
            Declaration(
                type: type, schema: reader.value("schema"), pattern: reader.optionalString("pattern"),
                defaultValue: reader.value("defaultValue"), summary: reader.optionalString("summary"),
                description: reader.optionalString("description"), source: reader.optionalString("source"),
                line: reader.optionalInt("line").map { Int($0) })
        }
        lock = try reader.value("locked").map { lock throws(BeaconError) in try BeaconLock(parsing: lock) }
    }
}

/// The schemas and lockdown rules in force and the problems found: `io.beacon.Settings.Schemas`.
public struct SettingsSources: Sendable, Hashable {
    /// One schema file or registration.
    public struct Schema: Sendable, Hashable {
        /// The file, or `client ID (COMMAND)` for a registration.
        public var source: String
        public var isRegistration: Bool
        public var keys: [Key]
    }

    /// One declaration of a schema.
    public struct Key: Sendable, Hashable {
        /// The key or pattern.
        public var key: String
        /// A summary of the type, for example `integer 6...72`.
        public var type: String
        public var defaultValue: JSONValue?
        public var summary: String?
        public var line: Int
    }

    /// One lockdown file.
    public struct Lockdown: Sendable, Hashable {
        public var file: String
        public var rules: [Rule]
    }

    /// One rule of a lockdown file: a forced value, or (`nil`) the key held at its default.
    public struct Rule: Sendable, Hashable {
        public var key: String
        public var line: Int
        public var value: JSONValue?
    }

    public var schemas: [Schema]
    public var lockdown: [Lockdown]
    public var problems: [DaemonStatus.SettingsProblem]

    init(parsing reply: [String: JSONValue]) throws(BeaconError) {
        let reader = ReplyReader(reply, "Schemas reply")
        schemas = try reader.array("schemas").map { (entry) throws(BeaconError) in
            let schema = try ReplyReader(entry, "schema source")
            return Schema(
                source: try schema.string("source"), isRegistration: schema.bool("registered", default: false),
                keys: try schema.array("keys").map { (entry) throws(BeaconError) in
                    let key = try ReplyReader(entry, "schema key")
                    return Key(
                        key: try key.string("key"), type: try key.string("type"), defaultValue: key.value("default"),
                        summary: key.optionalString("summary"), line: Int(try key.int("line")))
                })
        }
        lockdown = try reader.array("lockdown").map { (entry) throws(BeaconError) in
            let file = try ReplyReader(entry, "lockdown source")
            return Lockdown(
                file: try file.string("file"),
                rules: try file.array("rules").map { (entry) throws(BeaconError) in
                    let rule = try ReplyReader(entry, "lock rule")
                    return Rule(
                        key: try rule.string("key"), line: Int(try rule.int("line")), value: rule.value("value"))
                })
        }
        problems = try reader.array("problems").map { (entry) throws(BeaconError) in
            try DaemonStatus.SettingsProblem(parsing: entry)
        }
    }
}

/// What `io.beacon.Settings.Load` did.
public struct SettingsLoadResult: Sendable, Hashable {
    /// The daemon's version after the call.
    public var version: Int64
    /// Keys whose value changed, and keys that already held the value.
    public var changed: Int
    public var unchanged: Int
    /// Keys skipped because a lockdown rule locks them.
    public var locked: [String]

    init(parsing reply: [String: JSONValue]) throws(BeaconError) {
        let reader = ReplyReader(reply, "Load reply")
        version = try reader.int("version")
        changed = Int(try reader.int("changed"))
        unchanged = Int(try reader.int("unchanged"))
        locked = try reader.array("locked").compactMap(\.stringValue)
    }
}

extension DaemonStatus.SettingsProblem {
    init(parsing value: JSONValue) throws(BeaconError) {
        let problem = try ReplyReader(value, "settings problem")
        self.init(
            file: try problem.string("file"), line: Int(try problem.int("line")), problem: try problem.string("problem")
        )
    }
}
