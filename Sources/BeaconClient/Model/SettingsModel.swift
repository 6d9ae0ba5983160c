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

    init(_ reply: IOBeaconSettings.Describe.Reply) {
        key = reply.key
        value = reply.value
        isDefault = reply.default ?? false
        isSet = reply.set
        version = Int64(reply.version)
        storedValue = reply.storedValue
        isEphemeral = reply.ephemeral
        schema = reply.type.map { type in
            Declaration(
                type: type, schema: reply.schema, pattern: reply.pattern, defaultValue: reply.defaultValue,
                summary: reply.summary, description: reply.description, source: reply.source, line: reply.line)
        }
        lock = reply.locked.map { BeaconLock(file: $0.file, line: $0.line, forced: $0.forced) }
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

    init(_ reply: IOBeaconSettings.Schemas.Reply) {
        schemas = reply.schemas.map { schema in
            Schema(
                source: schema.source, isRegistration: schema.registered,
                keys: schema.keys.map { key in
                    Key(key: key.key, type: key.type, defaultValue: key.default, summary: key.summary, line: key.line)
                })
        }
        lockdown = reply.lockdown.map { file in
            Lockdown(file: file.file, rules: file.rules.map { Rule(key: $0.key, line: $0.line, value: $0.value) })
        }
        problems = reply.problems.map {
            DaemonStatus.SettingsProblem(file: $0.file, line: $0.line, problem: $0.problem)
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

    init(_ reply: IOBeaconSettings.Load.Reply) {
        version = Int64(reply.version)
        changed = reply.changed
        unchanged = reply.unchanged
        locked = reply.locked
    }
}
