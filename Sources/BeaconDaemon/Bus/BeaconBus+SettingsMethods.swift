import BeaconProtocol

/// The methods of `io.beacon.Settings`.
extension BeaconBus {
    func describe(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("key")
        _ = try parseKey(name)
        let entry = try table.entry(name)
        let rule = settings.rule(for: name)
        let shown = settings.effective(stored: entry?.value, rule: rule)
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
            let schema = settings.schemas[Int(rule.schema)]
            reply["type"] = .string(schema.schema.typeSummary)
            reply["schema"] = schema.schema.json
            reply["pattern"] = .string(schema.pattern.rawValue)
            if let value = schema.defaultValue { reply["defaultValue"] = Self.parsedValue(value) }
            if let summary = schema.summary { reply["summary"] = .string(summary) }
            if let description = schema.description { reply["description"] = .string(description) }
            reply["source"] = .string(schema.source)
            if schema.line > 0 { reply["line"] = .int(Int64(schema.line)) }
        }
        if rule.lock >= 0 { reply["locked"] = settingsService.lockJSON(rule.lock) }
        client.connection.reply(reply)
    }

    func reset(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("key")
        let recursive = try parameters.bool("recursive", default: false)
        let key = try parseKey(name)
        guard !Self.isReserved(name) else { throw BusError.readOnly(name) }
        var reset: [JSONValue] = []
        var locked: [JSONValue] = []
        if recursive {
            for below in try table.keys(below: key) {
                if settingsRule(below.rawValue, at: table.entries.index(forKey: below.rawValue)).lock >= 0 {
                    locked.append(.string(below.rawValue))
                } else if try delete(below.rawValue, origin: client.origin) != nil {
                    reset.append(.string(below.rawValue))
                }
            }
        } else {
            try checkUnset(name)
            if try delete(name, origin: client.origin) != nil { reset.append(.string(name)) }
        }
        client.connection.reply(["version": .int(table.version), "reset": .array(reset), "locked": .array(locked)])
    }

    func schemas(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        client.connection.reply(settingsService.schemasReply)
    }

    func register(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let schema = try parameters.object("schema")
        let file = SchemaFile.parse(.object(schema), keyLimits: limits.keyLimits)
        guard file.problems.isEmpty else { throw BusError.invalidSchema(file.problems.map(\.problem)) }
        let id = client.connection.id
        let command = client.origin.command.map { " (\($0))" } ?? ""
        settingsService.register(file, of: id, command: command)
        rebuildSettings()
        client.connection.reply(["keys": .int(Int64(file.entries.count))])
    }

    func dump(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let prefixName = try parameters.optionalString("prefix") ?? ""
        let prefix = prefixName.isEmpty ? nil : try parseKey(prefixName)
        var values: [String: JSONValue] = [:]
        for (key, entry) in try table.entries(below: prefix) {
            // The daemon's own keys (session.*, lifecycle.*, ...) are no one's to restore.
            guard !Self.isReserved(key.rawValue), entry.ephemeralOwner == nil else { continue }
            values[Self.relative(key.rawValue, to: prefixName)] = Self.parsedValue(entry.value)
        }
        client.connection.reply(["values": .object(values), "version": .int(table.version)])
    }

    func load(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let prefixName = try parameters.optionalString("prefix") ?? ""
        if !prefixName.isEmpty { _ = try parseKey(prefixName) }
        let values = try parameters.object("values")
        // Every value is checked before any is stored: a load is all or nothing.
        var writes: [(key: PropertyKey, value: [UInt8])] = []
        var locked: [JSONValue] = []
        var unchanged = 0
        for (relative, value) in values.sorted(by: { $0.key < $1.key }) {
            let name = prefixName.isEmpty ? relative : relative.isEmpty ? prefixName : prefixName + "." + relative
            let key = try parseKey(name)
            guard !Self.isReserved(name) else { throw BusError.readOnly(name) }
            var encoded: [UInt8] = []
            value.encode(into: &encoded)
            guard encoded.count <= limits.maxValueSize else {
                throw BusError.valueTooLarge(name, size: encoded.count, limit: limits.maxValueSize)
            }
            let index = try table.index(forKey: name)
            let rule = settingsRule(name, at: index)
            if rule.lock >= 0 {
                locked.append(.string(name))
                continue
            }
            if rule.schema >= 0 { try checkType(name, encoded, schema: rule.schema) }
            if let index, table.entries.values[index].holds(encoded, ownedBy: nil) {
                unchanged += 1
                continue
            }
            writes.append((key, encoded))
        }
        for write in writes {
            _ = store(
                key: write.key, value: write.value, at: try table.index(forKey: write.key.rawValue),
                ephemeralOwner: nil, origin: client.origin)
        }
        client.connection.reply([
            "version": .int(table.version), "changed": .int(Int64(writes.count)), "unchanged": .int(Int64(unchanged)),
            "locked": .array(locked),
        ])
    }

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
