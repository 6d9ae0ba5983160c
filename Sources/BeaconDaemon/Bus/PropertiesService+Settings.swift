import BeaconProtocol

/// Defaults, types and locks: the properties as the ``SettingsOverlay`` shows them.
///
/// The hot paths pay only when a rule exists: a Set checks ``SettingsService/hasSettings`` and then the rule cached
/// in the key's entry; a Get of a stored key answers its cached reply, which a settings change clears.
extension PropertiesService {
    // MARK: Applying

    /// Applies `new`: every key whose shown value, default flag or lock changed gets a change event with a version of
    /// its own. `quietly` (at start-up) publishes nothing.
    func apply(_ new: SettingsOverlay, quietly: Bool = false) {
        let old = settings.overlay
        logNewProblems(of: new, comparedWith: old)
        var affected = old.exactKeys.union(new.exactKeys)
        let patterns = old.lockPatterns + new.lockPatterns
        if !patterns.isEmpty {
            do {
                try table.forEachEntry(matching: patterns) { key, _ in affected.insert(key.rawValue) }
            } catch {
                logger.error(
                    "cannot read the keys of the settings' locks; their watchers may miss the change",
                    metadata: ["error": "\(error)"])
            }
        }
        settings.install(new)
        // Not `for index in table.entries.indices`: the indices hold the dictionary, and the first write then copied
        // all of it (9% of a start with 300,000 keys). An entry without a cached reply is not written to.
        var index = table.entries.startIndex
        while index != table.entries.endIndex {
            if table.entries.values[index].getReply != nil { table.entries.values[index].getReply = nil }
            table.entries.formIndex(after: &index)
        }
        guard !quietly else { return }
        let changes = SettingsService.shownChanges(
            from: old, to: new, affected: affected, stored: { try table.entry($0)?.value },
            failed: { name, error in
                logger.error(
                    "cannot read a key the settings changed", metadata: ["key": "\(name)", "error": "\(error)"])
            })
        for change in changes {
            let version = table.nextSettingsVersion()
            settings.recordChange(of: change.name, version: version)
            fanOut.append(
                ChangeEvent(
                    key: PropertyTable.trustedKey(change.name), value: change.after.value, old: change.before.value,
                    version: version, origin: .daemon, flags: change.after.flags))
        }
        let changed = changes.count
        if changed > 0 {
            pruneOverlayVersions()
            transaction.requestEndOfTick()
        }
        // A reload that changed nothing (a file saved as it was, say) is not news.
        let news =
            changed > 0 || old.schemas.count != new.schemas.count || old.locks.count != new.locks.count
            || old.problems != new.problems
        logger.log(
            level: news ? .info : .debug,
            "settings applied",
            metadata: [
                "schemas": "\(new.schemas.count)", "locks": "\(new.locks.count)", "changedKeys": "\(changed)",
                "problems": "\(new.problems.count)",
            ])
    }

    /// Keeps the versions of the settings' changes within the store's history limit, as the store keeps its
    /// deletions: beyond it the oldest go, and replays from before the newest of those resync. (Keys registered by
    /// clients that come and go would otherwise leave one entry each, for ever.)
    private func pruneOverlayVersions() {
        if let floor = settings.pruneChangeVersions(limit: table.historyLimit) {
            table.raiseHistoryFloor(to: floor)
        }
    }

    /// One log line per problem, the first time it is seen: a file that stays bad is not logged at every reload.
    private func logNewProblems(of new: SettingsOverlay, comparedWith old: SettingsOverlay) {
        let known = Set(old.problems)
        for problem in new.problems where !known.contains(problem) {
            logger.warning(
                "skipping part of a settings file: \(problem.problem)",
                metadata: ["file": "\(problem.file)", "line": "\(problem.line)"])
        }
    }

    // MARK: Rules

    /// The rules of `name`, cached in its entry at `index` when it has one.
    func settingsRule(_ name: String, at index: [String: PropertyTable.Entry].Index?) -> SettingsOverlay.Rule {
        guard let index else { return overlay.rule(for: name) }
        let epoch = settings.epoch
        if let rule = table.entries.values[index].cachedRule(epoch: epoch) { return rule }
        let rule = overlay.rule(for: name)
        table.entries.values[index].ruleEpoch = epoch
        table.entries.values[index].rule = rule
        return rule
    }

    /// Fails a Set of `name` to `encoded` that a lock or the key's schema refuses; returns the key's rule.
    func checkSet(_ name: String, _ encoded: [UInt8], at index: [String: PropertyTable.Entry].Index?)
        throws(VarlinkError) -> SettingsOverlay.Rule
    {
        let rule = settingsRule(name, at: index)
        if rule.lock >= 0 { throw settings.lockedError(name, rule) }
        guard rule.schema >= 0 else { return rule }
        try settings.checkType(name, encoded, schema: rule.schema)
        return rule
    }

    /// Fails an Unset (or reset) of a locked key.
    func checkUnset(_ name: String) throws(VarlinkError) {
        let rule = settingsRule(name, at: table.entries.index(forKey: name))
        if rule.lock >= 0 { throw settings.lockedError(name, rule) }
    }

    // MARK: Publishing

    /// Queues `change` as watchers see it: through the key's default and lock. `rule` is the key's, or
    /// ``SettingsOverlay/Rule/unknown``.
    @inline(__always)
    func publish(_ change: consuming ChangeEvent, rule: SettingsOverlay.Rule = .unknown) {
        // A new value of a key that no lock holds is shown as it is, and so is its old value unless that was the
        // key's default.
        if !hasSettings || (rule.lock == -1 && change.value != nil && (change.old != nil || rule.schema < 0)) {
            fanOut.append(change)
        } else {
            publishThroughSettings(change, rule: rule == .unknown ? overlay.rule(for: change.key.rawValue) : rule)
        }
    }

    private func publishThroughSettings(_ change: ChangeEvent, rule: SettingsOverlay.Rule) {
        guard rule != .none else {
            fanOut.append(change)
            return
        }
        let before = overlay.effective(stored: change.old, rule: rule)
        let after = overlay.effective(stored: change.value, rule: rule)
        // A locked key whose ephemeral owner left, say, shows the same value as before: nothing to tell.
        guard !SettingsService.sameShown(before, after) else { return }
        fanOut.append(
            ChangeEvent(
                key: change.key, value: after.value, old: before.value, version: change.version,
                origin: change.origin, flags: after.flags))
    }

    /// `events` (a replay or a snapshot of stored state) as watchers see them, with the keys that have a value only
    /// through the settings added: all of them when `since` is `nil`, else those whose settings changed after it.
    func throughSettings(
        _ events: [ChangeEvent], since: Int64?, matching matches: (PropertyKey) -> Bool
    ) throws(VarlinkError) -> [ChangeEvent] {
        guard hasSettings || !settings.changeVersions.isEmpty else { return events }
        var result: [ChangeEvent] = []
        result.reserveCapacity(events.count)
        var seen: [String: Int] = [:]
        for event in events {
            let name = event.key.rawValue
            let rule = overlay.rule(for: name)
            let shown = overlay.effective(stored: event.value, rule: rule)
            var (version, origin) = shownChange(name, version: event.version, origin: event.origin, shown: shown)
            if let since, let changed = settings.changeVersions[name], changed > since {
                version = max(version, changed)
            }
            seen[name] = result.count
            result.append(
                ChangeEvent(
                    key: event.key, value: shown.value, old: nil, version: version, origin: origin,
                    flags: shown.flags))
        }
        var extra: [String] = []
        if let since {
            extra = settings.changeVersions.compactMap { $0.value > since ? $0.key : nil }
        } else {
            extra = overlay.keysWithValues
        }
        for name in extra where seen[name] == nil {
            let entry = try table.entry(name)
            // A snapshot has every stored key already.
            if since == nil && entry != nil { continue }
            let key = PropertyTable.trustedKey(name)
            guard matches(key) else { continue }
            let shown = overlay.effective(stored: entry?.value, rule: overlay.rule(for: name))
            // A since replay tells of a key whose default went away as a deletion; a snapshot leaves it out.
            if shown.value == nil && since == nil { continue }
            // In a snapshot, as in Get, a key without a stored value has version 0; a replay tells of the change.
            let version = since == nil ? 0 : settings.changeVersions[name] ?? 0
            result.append(
                ChangeEvent(
                    key: key, value: shown.value, old: nil, version: version, origin: .daemon, flags: shown.flags))
        }
        result.sort { $0.version < $1.version }
        return result
    }

    // MARK: Reading

    /// The version and origin of the change that `shown` shows: the stored change's (`version`, `origin`), unless the
    /// settings show another value (the key's default under a lock, or a forced value). That one is the daemon's,
    /// at the version the settings last changed the key, which is the version its change event carried; the stored
    /// change's when they have not changed it since the start. Get, List, Watch's initial state and replays all show
    /// this, so every view of a key agrees with its events.
    func shownChange(
        _ name: String, version: Int64, origin: Origin, shown: SettingsOverlay.Effective
    ) -> (version: Int64, origin: Origin) {
        guard shown.isDefault || (shown.lock >= 0 && overlay.locks[Int(shown.lock)].forcedValue != nil) else {
            return (version, origin)
        }
        return (max(version, settings.changeVersions[name] ?? 0), .daemon)
    }

    /// Encodes the `Property` of a stored key as clients see it.
    func encodeStoredProperty(_ key: String, _ entry: PropertyTable.Entry, into buffer: inout [UInt8]) {
        let shown = overlay.effective(stored: entry.value, rule: overlay.rule(for: key))
        let (version, origin) = shownChange(key, version: entry.version, origin: entry.origin, shown: shown)
        encodeProperty(
            key, value: shown.value ?? entry.value, version: version, modifiedUsec: entry.modifiedUsec,
            ephemeral: entry.ephemeralOwner != nil, origin: origin, shown: shown, into: &buffer)
    }

    /// Encodes the `Property` of a key that has a value only through the settings, with version 0 (the key counts
    /// as absent for ifVersion); false when it has none.
    func encodeUnstoredProperty(_ key: String, into buffer: inout [UInt8]) -> Bool {
        let shown = overlay.effective(stored: nil, rule: overlay.rule(for: key))
        guard let value = shown.value else { return false }
        encodeProperty(
            key, value: value, version: 0, modifiedUsec: 0, ephemeral: false, origin: .daemon, shown: shown,
            into: &buffer)
        return true
    }

    private func encodeProperty(
        _ key: String, value: [UInt8], version: Int64, modifiedUsec: Int64, ephemeral: Bool, origin: Origin,
        shown: SettingsOverlay.Effective, into buffer: inout [UInt8]
    ) {
        JSONWriter.appendASCII("{\"key\":", to: &buffer)
        JSONWriter.appendString(key, to: &buffer)
        JSONWriter.appendASCII(",\"value\":", to: &buffer)
        buffer.append(contentsOf: value)
        JSONWriter.appendASCII(",\"version\":", to: &buffer)
        JSONWriter.appendInt(version, to: &buffer)
        JSONWriter.appendASCII(",\"modifiedUsec\":", to: &buffer)
        JSONWriter.appendInt(modifiedUsec, to: &buffer)
        JSONWriter.appendASCII(
            ephemeral ? ",\"ephemeral\":true,\"origin\":" : ",\"ephemeral\":false,\"origin\":", to: &buffer)
        origin.encode(into: &buffer)
        if shown.isDefault { JSONWriter.appendASCII(",\"default\":true", to: &buffer) }
        if shown.lock >= 0 {
            let lock = overlay.locks[Int(shown.lock)]
            JSONWriter.appendASCII(",\"locked\":{\"file\":", to: &buffer)
            JSONWriter.appendString(lock.file, to: &buffer)
            JSONWriter.appendASCII(",\"line\":", to: &buffer)
            JSONWriter.appendInt(Int64(lock.line), to: &buffer)
            JSONWriter.appendASCII(lock.forcedValue != nil ? ",\"forced\":true}" : ",\"forced\":false}", to: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// Answers a Get of a key without a stored value that has a default or a forced value; false when it has none.
    func getUnstored(_ name: String, client: BusClient) -> Bool {
        var reply: [UInt8] = []
        JSONWriter.appendASCII("{\"parameters\":{\"property\":", to: &reply)
        guard encodeUnstoredProperty(name, into: &reply) else { return false }
        JSONWriter.appendASCII("}}", to: &reply)
        reply.append(0)
        client.connection.sendEncoded { $0.append(contentsOf: reply) }
        return true
    }

    /// The keys below `prefix` (every key when `nil`) that have a value only through the settings.
    func unstoredKeys(below prefix: PropertyKey?) throws(VarlinkError) -> [PropertyKey] {
        guard hasSettings else { return [] }
        var keys: [PropertyKey] = []
        for name in overlay.keysWithValues {
            guard try table.entry(name) == nil else { continue }
            let key = PropertyTable.trustedKey(name)
            if let prefix, !key.hasPrefix(prefix) { continue }
            guard overlay.effective(stored: nil, rule: overlay.rule(for: name)).value != nil else { continue }
            keys.append(key)
        }
        return keys
    }
}

/// The stored values, for `io.beacon.Settings`' methods.
extension PropertiesService: SettingsHost {
    var currentVersion: Int64 { table.version }

    func storedEntry(_ name: String) throws(VarlinkError) -> PropertyTable.Entry? {
        try table.entry(name)
    }

    func storedEntries(below prefix: PropertyKey?) throws(VarlinkError) -> [(
        key: PropertyKey, entry: PropertyTable.Entry
    )] {
        try table.entries(below: prefix)
    }

    func rule(of name: String) -> SettingsOverlay.Rule {
        settingsRule(name, at: table.entries.index(forKey: name))
    }

    func holds(_ name: String, _ value: [UInt8]) throws(VarlinkError) -> Bool {
        guard let index = try table.index(forKey: name) else { return false }
        return table.entries.values[index].holds(value, ownedBy: nil)
    }

    func store(_ key: PropertyKey, value: [UInt8], origin: Origin) throws(VarlinkError) {
        _ = store(
            key: key, value: value, at: try table.index(forKey: key.rawValue), ephemeralOwner: nil, origin: origin)
    }
}
