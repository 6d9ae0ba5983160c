import BeaconProtocol

extension SettingsService {
    /// A key whose shown state a new overlay changes: what it showed, and what it shows.
    struct ShownChange {
        let name: String
        let before: SettingsOverlay.Effective
        let after: SettingsOverlay.Effective
    }

    /// The keys of `affected`, in order, whose shown state (value, default flag, whether locked) differs between
    /// `old` and `new`, their stored values read by `stored`; a key whose value cannot be read is told to `failed`
    /// and left out.
    static func shownChanges(
        from old: SettingsOverlay, to new: SettingsOverlay, affected: Set<String>,
        stored: (String) throws -> [UInt8]?, failed: (String, any Error) -> Void
    ) -> [ShownChange] {
        var changes: [ShownChange] = []
        for name in affected.sorted() {
            let value: [UInt8]?
            do {
                value = try stored(name)
            } catch {
                failed(name, error)
                continue
            }
            let before = old.effective(stored: value, rule: old.rule(for: name))
            let after = new.effective(stored: value, rule: new.rule(for: name))
            if !sameShown(before, after) { changes.append(ShownChange(name: name, before: before, after: after)) }
        }
        return changes
    }

    /// Whether two effective states look the same to a client: value, default flag and whether locked.
    static func sameShown(_ a: SettingsOverlay.Effective, _ b: SettingsOverlay.Effective) -> Bool {
        a.value == b.value && a.isDefault == b.isDefault && (a.lock >= 0) == (b.lock >= 0)
    }

    // MARK: What the methods and Status report

    /// The settings part of `Status`.
    var status: JSONValue {
        .object([
            "schemaFiles": .int(Int64(overlay.schemaSources.filter(\.fromFile).count)),
            "lockdownFiles": .int(Int64(overlay.lockdownSources.count)),
            "schemaKeys": .int(Int64(overlay.schemas.count)),
            "locks": .int(Int64(overlay.locks.count)),
            "registrations": .int(Int64(registrations.count)),
            "problems": .array(problemsJSON),
        ])
    }

    /// The reply of `io.beacon.Settings.Schemas`: every schema source with its keys, every lockdown file with its
    /// rules, and the problems found in them.
    var schemasReply: [String: JSONValue] {
        var schemas: [JSONValue] = []
        for source in overlay.schemaSources {
            var keys: [JSONValue] = []
            for entry in source.file.entries {
                var key: [String: JSONValue] = [
                    "key": .string(entry.pattern.rawValue), "type": .string(entry.schema.typeSummary),
                    "line": .int(Int64(entry.line)),
                ]
                if let value = entry.defaultValue { key["default"] = value }
                if let summary = entry.summary { key["summary"] = .string(summary) }
                keys.append(.object(key))
            }
            schemas.append(
                .object(["source": .string(source.name), "registered": .bool(!source.fromFile), "keys": .array(keys)]))
        }
        var lockdown: [JSONValue] = []
        for source in overlay.lockdownSources {
            let rules: [JSONValue] = source.file.rules.map { rule in
                var object: [String: JSONValue] = [
                    "key": .string(rule.pattern.rawValue), "line": .int(Int64(rule.line)),
                ]
                if let forced = rule.forcedValue { object["value"] = Self.parsedValue(forced) }
                return .object(object)
            }
            lockdown.append(.object(["file": .string(source.path), "rules": .array(rules)]))
        }
        return ["schemas": .array(schemas), "lockdown": .array(lockdown), "problems": .array(problemsJSON)]
    }

    /// The lock at `index` of the overlay's locks, as `Describe` reports it.
    func lockJSON(_ index: Int32) -> JSONValue {
        let lock = overlay.locks[Int(index)]
        return .object([
            "file": .string(lock.file), "line": .int(Int64(lock.line)), "forced": .bool(lock.forcedValue != nil),
        ])
    }

    private var problemsJSON: [JSONValue] {
        overlay.problems.map {
            .object(["file": .string($0.file), "line": .int(Int64($0.line)), "problem": .string($0.problem)])
        }
    }
}
