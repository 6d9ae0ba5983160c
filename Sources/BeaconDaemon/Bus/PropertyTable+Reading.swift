import BeaconProtocol
import VarlinkServer

extension PropertyTable {
    /// Why a stored row of `key` at `version` cannot be the bus's; `nil` when it can.
    static func invalidity(of key: String, version: Int64) -> String? {
        guard version > 0 else { return "version \(version) is below 1" }
        // Keys are ASCII: a non-ASCII name could equal a stored key by canonical equivalence.
        guard key.utf8.allSatisfy({ $0 < 0x80 }) else { return "not a valid key: not ASCII" }
        do {
            _ = try PropertyKey(key, limits: KeyLimits(maxLength: Int.max, maxDepth: Int.max))
            return nil
        } catch {
            return "not a valid key: \(error.reason)"
        }
    }

    // MARK: Reading

    /// A key of the table: every one was validated when it was set, or when it was read from the store.
    static func trustedKey(_ name: String) -> PropertyKey {
        (try? PropertyKey(name, limits: KeyLimits(maxLength: Int.max, maxDepth: Int.max)))!
    }

    /// The position of `name`'s entry in ``entries``, read from the store first when it is not in memory; `nil`
    /// when the key has no value.
    @inline(__always)
    func index(forKey name: String) throws(VarlinkError) -> [String: Entry].Index? {
        if let index = entries.index(forKey: name) { return index }
        return try readEntry(name)
    }

    /// The entry of `name`, read from the store when it is not in memory.
    func entry(_ name: String) throws(VarlinkError) -> Entry? {
        try index(forKey: name).map { entries.values[$0] }
    }

    /// Reads `name`'s row from the store into ``entries``.
    @inline(never)
    private func readEntry(_ name: String) throws(VarlinkError) -> [String: Entry].Index? {
        guard let entry = try storedEntry(name) else { return nil }
        entries[name] = entry
        return entries.index(forKey: name)
    }

    /// The entry of `name`'s stored row, not kept in memory; `nil` when it has none, or one the bus could not have
    /// written, or it was deleted since the last commit.
    private func storedEntry(_ name: String) throws(VarlinkError) -> Entry? {
        guard deletedBeforeCommit.isEmpty || !deletedBeforeCommit.contains(name),
            let row = try read({ try writer.storage.property(name) })
        else { return nil }
        return admit(row)
    }

    /// The entry of a row read from the store; `nil`, reported, for a row the bus could not have written.
    private func admit(_ row: StoredRow) -> Entry? {
        let property = row.property
        let name = property.key
        guard row.parses else {
            report("property", name, "the value is not JSON")
            return nil
        }
        if let reason = Self.invalidity(of: name, version: property.version) {
            report("property", name, reason)
            return nil
        }
        if let tombstone = tombstones[name] {
            // Versions are never handed out twice, so the row of the higher version is the later change.
            guard tombstone.version < property.version else {
                // A deletion of this tick: the row goes with its commit. Otherwise a store written by other hands.
                if tombstone.version <= writer.storedVersion {
                    report("property", name, "the key is also deleted, with a later version")
                }
                return nil
            }
            report("tombstone", name, "the key is also stored, with a later version")
            tombstones[name] = nil
        }
        return Entry(
            value: property.value, version: property.version, modifiedUsec: property.modifiedUsec,
            origin: property.origin, ephemeralOwner: nil, markedEphemeral: false)
    }

    private func read<T>(_ body: () throws -> T) throws(VarlinkError) -> T {
        do {
            return try body()
        } catch {
            throw BusError.storeFailed("\(error)")
        }
    }

    /// How many properties there are, ephemeral ones included.
    var count: Int {
        ephemeralKeys.values.reduce(writer.propertyCount) { $0 + $1.count }
    }

    /// Keys whose state in memory the store does not have yet, or never has: those changed since the last commit
    /// and the ephemeral ones. Some may have no entry (deleted).
    private func forEachUnstoredName(_ body: (String) -> Void) {
        for step in undo { body(step.name) }
        for keys in ephemeralKeys.values {
            for name in keys { body(name) }
        }
    }

    /// Calls `body` with each entry whose key is `prefix` or below it (every entry when `nil`), once, in no order.
    /// Reads the store's rows of the range; a row read so is not kept in memory.
    func forEachEntry(below prefix: PropertyKey?, _ body: (String, Entry) -> Void) throws(VarlinkError) {
        var given: Set<String> = []
        forEachUnstoredName { name in
            guard prefix.map({ Self.trustedKey(name).hasPrefix($0) }) ?? true, given.insert(name).inserted else {
                return
            }
            if let entry = entries[name] { body(name, entry) }
        }
        func row(_ row: StoredRow) {
            let name = row.property.key
            guard !given.contains(name) else { return }
            if let entry = entries[name] ?? admit(row) { body(name, entry) }
        }
        try read {
            let storage = writer.storage
            guard let prefix else {
                try storage.properties(from: "", below: nil, row)
                return
            }
            if let exact = try storage.property(prefix.rawValue) { row(exact) }
            // The keys below `a.b` are the texts from `a.b.` up to `a.b/`, '/' being the byte after '.'.
            try storage.properties(from: prefix.rawValue + ".", below: prefix.rawValue + "/", row)
        }
    }

    /// The entries whose key is `prefix` or below it (every entry when `nil`), in key order.
    func entries(below prefix: PropertyKey?) throws(VarlinkError) -> [(key: PropertyKey, entry: Entry)] {
        var found: [(key: PropertyKey, entry: Entry)] = []
        try forEachEntry(below: prefix) { name, entry in found.append((Self.trustedKey(name), entry)) }
        found.sort { $0.key < $1.key }
        return found
    }

    /// The keys of the entries, sorted, below `prefix` when there is one.
    func keys(below prefix: PropertyKey?) throws(VarlinkError) -> [PropertyKey] {
        try entries(below: prefix).map(\.key)
    }

    /// The smallest set of prefixes whose ranges hold every key that one of `patterns` matches (each pattern's
    /// segments before its first wildcard); `nil` when a pattern starts with a wildcard.
    static func ranges(of patterns: [KeyPattern]) -> [PropertyKey]? {
        var prefixes: [PropertyKey] = []
        for pattern in patterns {
            let literal = pattern.literalPrefix
            guard !literal.isEmpty else { return nil }
            prefixes.append(trustedKey(literal.joined(separator: ".")))
        }
        prefixes.sort()
        var ranges: [PropertyKey] = []
        for prefix in prefixes where !ranges.contains(where: { prefix.hasPrefix($0) }) {
            ranges.append(prefix)
        }
        return ranges
    }

    /// Calls `body` with each entry whose key one of `patterns` matches, once, in no order: the store is read in
    /// the ranges of the patterns' literal prefixes.
    func forEachEntry(matching patterns: [KeyPattern], _ body: (PropertyKey, Entry) -> Void) throws(VarlinkError) {
        func visit(_ name: String, _ entry: Entry) {
            let key = Self.trustedKey(name)
            if patterns.contains(where: { $0.matches(key) }) { body(key, entry) }
        }
        guard let ranges = Self.ranges(of: patterns) else { return try forEachEntry(below: nil, visit) }
        for prefix in ranges { try forEachEntry(below: prefix, visit) }
    }

    /// Every key matching `matches` changed after `since`, once, with its latest state, in version order; `nil`
    /// when `since` is out of the history kept.
    func changes(since: Int64, matching matches: (PropertyKey) -> Bool) throws(VarlinkError) -> [ChangeEvent]? {
        guard since >= historyFloor, since <= version else { return nil }
        var replay: [ChangeEvent] = []
        func visit(_ name: String, _ entry: Entry) {
            guard entry.version > since else { return }
            let key = Self.trustedKey(name)
            if matches(key) {
                replay.append(
                    ChangeEvent(key: key, value: entry.value, old: nil, version: entry.version, origin: entry.origin))
            }
        }
        var given: Set<String> = []
        if since < recentFloor { mergeSavedRecent() }
        if since >= recentFloor {
            // Every key set after `since` is in `recent`: read those, from memory or their rows.
            for (version, name) in recent.reversed() {
                guard version > since else { break }
                guard given.insert(name).inserted else { continue }
                var entry = entries[name]
                if entry == nil { entry = try storedEntry(name) }
                if let entry { visit(name, entry) }
            }
        } else {
            forEachUnstoredName { name in
                guard given.insert(name).inserted, let entry = entries[name] else { return }
                visit(name, entry)
            }
            try read {
                try writer.storage.properties(changedAfter: since) { row in
                    let name = row.property.key
                    guard !given.contains(name), let entry = entries[name] ?? admit(row) else { return }
                    visit(name, entry)
                }
            }
        }
        for (name, tombstone) in tombstones where tombstone.version > since {
            let key = Self.trustedKey(name)
            if matches(key) {
                replay.append(
                    ChangeEvent(key: key, value: nil, old: nil, version: tombstone.version, origin: tombstone.origin))
            }
        }
        replay.sort { $0.version < $1.version }
        return replay
    }

    /// The current state of every key that one of `patterns` matches, in version order.
    func snapshot(matching patterns: [KeyPattern]) throws(VarlinkError) -> [ChangeEvent] {
        var current: [ChangeEvent] = []
        try forEachEntry(matching: patterns) { key, entry in
            current.append(
                ChangeEvent(key: key, value: entry.value, old: nil, version: entry.version, origin: entry.origin))
        }
        current.sort { $0.version < $1.version }
        return current
    }
}
