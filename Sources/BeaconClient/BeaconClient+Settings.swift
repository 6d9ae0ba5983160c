import BeaconProtocol
import BeaconProtocolFoundation

extension BeaconClient {
    /// Registers defaults for keys, as `UserDefaults.register(defaults:)` does: a key with no stored value shows its
    /// default to every client of the daemon (in ``get(_:)``, watches and remote properties), marked as a default.
    ///
    /// ```swift
    /// try await client.register(defaults: ["app.editor.font-size": 12, "app.editor.theme": "light"])
    /// ```
    ///
    /// The registration lasts as long as this client: the client registers again after every reconnection, and the
    /// defaults go when it closes. A schema file that declares a key wins over a registration. Calling it again adds
    /// to what was registered (a key registered twice keeps the later default).
    public func register(defaults: [String: JSONValue]) async throws(BeaconError) {
        try await link.register(defaults.mapValues { .object(["default": $0]) })
    }

    /// Registers schema entries by key or key pattern, each a JSON Schema object (`type`, `enum`, `minimum`, ...)
    /// with an optional `default`, `summary` and `description`, as in a schema file. Lasts like
    /// ``register(defaults:)``. Throws the daemon's `io.beacon.Settings.InvalidSchema` when an entry is bad; nothing
    /// of the call is registered then.
    ///
    /// ```swift
    /// try await client.register(schema: [
    ///     "app.editor.font-size": ["type": "integer", "minimum": 6, "maximum": 72, "default": 12],
    /// ])
    /// ```
    public func register(schema: [String: JSONValue]) async throws(BeaconError) {
        try await link.register(schema)
    }

    /// Removes the stored value of `key` (and of every key below it with `recursive`), which then shows its default.
    /// Unlike ``unset(_:ifVersion:)`` a key with nothing stored is no error. Returns the keys whose stored value was
    /// removed; locked keys below `key` are skipped.
    @discardableResult
    public func reset(_ key: String, recursive: Bool = false) async throws(BeaconError) -> [String] {
        try await typed { try await IOBeaconSettings.Client(calls).reset(key: key, recursive: recursive) }.reset
    }

    /// The setting `key` as a `Value`: its stored value, else the default of its schema (a schema file or a
    /// registration). The call gives no default: the schema does. While the key has neither, observers get nothing,
    /// and the property reports ``BeaconError/Code/keyNotFound`` on its ``RemoteProperty/errors``.
    ///
    /// ```swift
    /// let size = client.setting("app.editor.font-size", as: Int.self)
    /// label.reactive.fontSize <~ size
    /// ```
    public func setting<Value: Codable & Sendable>(_ key: String, as type: Value.Type) -> RemoteProperty<Value> {
        RemoteProperty(
            client: self, key: key,
            decode: { (json, version) throws(BeaconError) in
                guard let json else {
                    throw BeaconError(
                        code: .keyNotFound, name: IOBeaconProperties.KeyNotFound.name,
                        parameters: ["key": .string(key)],
                        message: "\"\(key)\" has no value and no default")
                }
                return try ValueCoding.decode(Value.self, from: json, key: key, version: version)
            },
            encode: { (value) throws(BeaconError) in try ValueCoding.encode(value, key: key) }
        )
    }

    /// Everything the daemon knows of `key`: what a Get shows, whether a value is stored, the schema's declaration
    /// and the lock (`io.beacon.Settings.Describe`).
    public func describe(_ key: String) async throws(BeaconError) -> SettingDescription {
        SettingDescription(try await typed { try await IOBeaconSettings.Client(calls).describe(key: key) })
    }

    /// The schemas and lockdown rules in force, where each came from, and the problems the daemon found in its
    /// files (`io.beacon.Settings.Schemas`).
    public func settingsSources() async throws(BeaconError) -> SettingsSources {
        SettingsSources(try await typed { try await IOBeaconSettings.Client(calls).schemas() })
    }

    /// The stored, persistent values at or below `prefix` (every key when `nil`), by key relative to it, and the
    /// daemon's version: what ``load(_:prefix:)`` takes back. Defaults, ephemeral values and the daemon's own keys
    /// are left out.
    public func dump(prefix: String? = nil) async throws(BeaconError) -> (values: [String: JSONValue], version: Int64) {
        let reply = try await typed { try await IOBeaconSettings.Client(calls).dump(prefix: prefix) }
        guard let values = reply.values.objectValue else {
            throw .invalidReply("Dump reply's values are not an object")
        }
        return (values, Int64(reply.version))
    }

    /// Stores `values` (by key relative to `prefix`, as ``dump(prefix:)`` gives them), all or nothing: a bad key
    /// or a value its schema refuses stores nothing and throws the error Set would. Locked keys are skipped and
    /// listed in the result.
    @discardableResult
    public func load(_ values: [String: JSONValue], prefix: String? = nil) async throws(BeaconError)
        -> SettingsLoadResult
    {
        SettingsLoadResult(
            try await typed { try await IOBeaconSettings.Client(calls).load(prefix: prefix, values: .object(values)) })
    }
}
