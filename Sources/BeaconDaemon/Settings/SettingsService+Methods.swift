import BeaconProtocol

/// The properties as the settings see them: what `io.beacon.Settings`' methods read and write, and where a new
/// overlay is applied. ``PropertiesService`` is the one.
protocol SettingsHost: AnyObject {
    var limits: DaemonLimits { get }
    /// The version of the last change.
    var currentVersion: Int64 { get }
    /// The stored entry of `name`, if it has one.
    func storedEntry(_ name: String) throws(VarlinkError) -> PropertyTable.Entry?
    /// The stored entries below `prefix` (all of them when it is `nil`), in key order.
    func storedEntries(below prefix: PropertyKey?) throws(VarlinkError) -> [(
        key: PropertyKey, entry: PropertyTable.Entry
    )]
    /// The rule of `name`, cached in its entry.
    func rule(of name: String) -> SettingsOverlay.Rule
    /// Whether `name` holds `value`, with no ephemeral owner.
    func holds(_ name: String, _ value: [UInt8]) throws(VarlinkError) -> Bool
    /// Stores `value` and queues its change.
    func store(_ key: PropertyKey, value: [UInt8], origin: Origin) throws(VarlinkError)
    /// Deletes `name` and queues its change; returns the deletion's version, `nil` when it had no value.
    func delete(_ name: String, origin: Origin) throws(VarlinkError) -> Int64?
    /// Makes `overlay` the one in force, with a change for every key whose shown value, default or lock it changes;
    /// `quietly` (at start-up) publishes nothing.
    func apply(_ overlay: SettingsOverlay, quietly: Bool)
}

/// The methods of `io.beacon.Settings`, and the reading of the settings' sources.
extension SettingsService {
    // MARK: Sources

    /// Compiles the files and the registrations into a new overlay and has the host apply it.
    func rebuild(quietly: Bool = false) {
        host?.apply(compile(), quietly: quietly)
    }

    /// Reads the schema and lockdown directories again and applies what changed. `changed`: only these files are
    /// read again (the settings watcher's report), every other one keeps its last complete reading; `nil` reads
    /// them all.
    func reload(changed: Set<String>? = nil) {
        guard let host, readFiles(changed: changed, limits: host.limits) else { return }
        rebuild()
    }

    // MARK: Methods

    /// The properties the methods read and write; set by the bus before the first call.
    private func properties(for method: String) throws(VarlinkError) -> any SettingsHost {
        guard let host else { throw .methodNotImplemented(method) }
        return host
    }

    func describe(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let host = try properties(for: IOBeaconSettings.Describe.method)
        let name = try parameters.string("key")
        _ = try host.limits.parseKey(name)
        let entry = try host.storedEntry(name)
        let rule = overlay.rule(for: name)
        let shown = overlay.effective(stored: entry?.value, rule: rule)
        var reply: [String: JSONValue] = [
            "key": .string(name),
            "set": .bool(entry != nil),
            "version": .int(entry?.version ?? 0),
            "ephemeral": .bool(entry?.ephemeralOwner != nil),
        ]
        if let value = shown.value { reply["value"] = Self.parsedValue(value) }
        if let stored = entry?.value, stored != shown.value { reply["storedValue"] = Self.parsedValue(stored) }
        if shown.isDefault { reply["default"] = .bool(true) }
        if rule.schema >= 0 {
            let schema = overlay.schemas[Int(rule.schema)]
            reply["type"] = .string(schema.schema.typeSummary)
            reply["schema"] = schema.schema.json
            reply["pattern"] = .string(schema.pattern.rawValue)
            if let value = schema.defaultValue { reply["defaultValue"] = Self.parsedValue(value) }
            if let summary = schema.summary { reply["summary"] = .string(summary) }
            if let description = schema.description { reply["description"] = .string(description) }
            reply["source"] = .string(schema.source)
            if schema.line > 0 { reply["line"] = .int(Int64(schema.line)) }
        }
        if rule.lock >= 0 { reply["locked"] = lockJSON(rule.lock) }
        client.connection.reply(reply)
    }

    func reset(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let host = try properties(for: IOBeaconSettings.Reset.method)
        let name = try parameters.string("key")
        let recursive = try parameters.bool("recursive", default: false)
        let key = try host.limits.parseKey(name)
        guard !BusNames.isReserved(name) else { throw BusError.readOnly(name) }
        var reset: [JSONValue] = []
        var locked: [JSONValue] = []
        if recursive {
            for (below, _) in try host.storedEntries(below: key) {
                if host.rule(of: below.rawValue).lock >= 0 {
                    locked.append(.string(below.rawValue))
                } else if try host.delete(below.rawValue, origin: client.origin) != nil {
                    reset.append(.string(below.rawValue))
                }
            }
        } else {
            let rule = host.rule(of: name)
            if rule.lock >= 0 { throw lockedError(name, rule) }
            if try host.delete(name, origin: client.origin) != nil { reset.append(.string(name)) }
        }
        client.connection.reply([
            "version": .int(host.currentVersion), "reset": .array(reset), "locked": .array(locked),
        ])
    }

    func schemas(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        client.connection.reply(schemasReply)
    }

    func register(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let host = try properties(for: IOBeaconSettings.Register.method)
        let schema = try parameters.object("schema")
        let file = SchemaFile.parse(.object(schema), keyLimits: host.limits.keyLimits)
        guard file.problems.isEmpty else { throw BusError.invalidSchema(file.problems.map(\.problem)) }
        let command = client.origin.command.map { " (\($0))" } ?? ""
        register(file, of: client.connection.id, command: command)
        rebuild()
        client.connection.reply(["keys": .int(Int64(file.entries.count))])
    }

    func dump(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let host = try properties(for: IOBeaconSettings.Dump.method)
        let prefixName = try parameters.optionalString("prefix") ?? ""
        let prefix = prefixName.isEmpty ? nil : try host.limits.parseKey(prefixName)
        var values: [String: JSONValue] = [:]
        for (key, entry) in try host.storedEntries(below: prefix) {
            // The daemon's own keys (session.*, lifecycle.*, ...) are no one's to restore.
            guard !BusNames.isReserved(key.rawValue), entry.ephemeralOwner == nil else { continue }
            values[Self.relative(key.rawValue, to: prefixName)] = Self.parsedValue(entry.value)
        }
        client.connection.reply(["values": .object(values), "version": .int(host.currentVersion)])
    }

    func load(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let host = try properties(for: IOBeaconSettings.Load.method)
        let limits = host.limits
        let prefixName = try parameters.optionalString("prefix") ?? ""
        if !prefixName.isEmpty { _ = try limits.parseKey(prefixName) }
        let values = try parameters.object("values")
        // Every value is checked before any is stored: a load is all or nothing.
        var writes: [(key: PropertyKey, value: [UInt8])] = []
        var locked: [JSONValue] = []
        var unchanged = 0
        for (relative, value) in values.sorted(by: { $0.key < $1.key }) {
            let name = prefixName.isEmpty ? relative : relative.isEmpty ? prefixName : prefixName + "." + relative
            let key = try limits.parseKey(name)
            guard !BusNames.isReserved(name) else { throw BusError.readOnly(name) }
            var encoded: [UInt8] = []
            value.encode(into: &encoded)
            guard encoded.count <= limits.maxValueSize else {
                throw BusError.valueTooLarge(name, size: encoded.count, limit: limits.maxValueSize)
            }
            // Read first: the rule is cached in the key's entry, which a key not read since the start lacks.
            let holds = try host.holds(name, encoded)
            let rule = host.rule(of: name)
            if rule.lock >= 0 {
                locked.append(.string(name))
                continue
            }
            if rule.schema >= 0 { try checkType(name, encoded, schema: rule.schema) }
            if holds {
                unchanged += 1
                continue
            }
            writes.append((key, encoded))
        }
        for write in writes {
            try host.store(write.key, value: write.value, origin: client.origin)
        }
        client.connection.reply([
            "version": .int(host.currentVersion), "changed": .int(Int64(writes.count)),
            "unchanged": .int(Int64(unchanged)), "locked": .array(locked),
        ])
    }

    // MARK: Checks

    /// Fails a value that the schema at `index` of the overlay's schemas refuses.
    func checkType(_ name: String, _ encoded: [UInt8], schema index: Int32) throws(VarlinkError) {
        let schema = overlay.schemas[Int(index)].schema
        if let violation = schema.violation(ofValidJSON: encoded) {
            throw BusError.typeMismatch(name, expected: schema.typeSummary, reason: violation)
        }
    }

    /// `io.beacon.Locked` for a write of `name`, which `rule`'s lock holds.
    func lockedError(_ name: String, _ rule: SettingsOverlay.Rule) -> VarlinkError {
        let lock = overlay.locks[Int(rule.lock)]
        return BusError.locked(name, file: lock.file, line: lock.line)
    }

    // MARK: Values

    /// `name` relative to `prefix`: `b.c` for `a.b.c` below `a`, the empty string for the prefix itself.
    static func relative(_ name: String, to prefix: String) -> String {
        guard !prefix.isEmpty else { return name }
        if name == prefix { return "" }
        return String(name.dropFirst(prefix.count + 1))
    }

    /// Values the bus stored passed the configured limits already.
    static let storedValueLimits = JSONLimits(maxDepth: JSONLimits.maximumDepth, maxBytes: Int.max)

    /// A value the bus wrote (compact JSON it validated), parsed back.
    static func parsedValue(_ bytes: [UInt8]) -> JSONValue {
        (try? JSONValue(parsing: bytes, limits: Self.storedValueLimits)) ?? .null
    }
}

extension SettingsService: IOBeaconSettings.Handlers {}
