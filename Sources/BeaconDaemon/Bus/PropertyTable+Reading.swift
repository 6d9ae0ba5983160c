import BeaconProtocol

extension PropertyTable {
    // MARK: Reading

    /// A key of the table: every one was validated when it was set, or when it was loaded (``load(_:now:skipped:)``).
    static func trustedKey(_ name: String) -> PropertyKey {
        (try? PropertyKey(name, limits: KeyLimits(maxLength: Int.max, maxDepth: Int.max)))!
    }

    /// The keys of the entries, sorted, below `prefix` when there is one.
    func keys(below prefix: PropertyKey?) -> [PropertyKey] {
        var keys: [PropertyKey] = []
        for name in entries.keys {
            guard let prefix else {
                keys.append(Self.trustedKey(name))
                continue
            }
            guard name.utf8.starts(with: prefix.rawValue.utf8) else { continue }
            let key = Self.trustedKey(name)
            if key.hasPrefix(prefix) { keys.append(key) }
        }
        keys.sort()
        return keys
    }

    /// Every key matching `matches` changed after `since`, once, with its latest state, in version order; `nil`
    /// when `since` is out of the history kept.
    func changes(since: Int64, matching matches: (PropertyKey) -> Bool) -> [ChangeEvent]? {
        guard since >= historyFloor, since <= version else { return nil }
        var replay: [ChangeEvent] = []
        for (name, entry) in entries where entry.version > since {
            let key = Self.trustedKey(name)
            if matches(key) {
                replay.append(
                    ChangeEvent(key: key, value: entry.value, old: nil, version: entry.version, origin: entry.origin))
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

    /// The current state of every key matching `matches`, in version order.
    func snapshot(matching matches: (PropertyKey) -> Bool) -> [ChangeEvent] {
        var current: [ChangeEvent] = []
        for (name, entry) in entries {
            let key = Self.trustedKey(name)
            if matches(key) {
                current.append(
                    ChangeEvent(key: key, value: entry.value, old: nil, version: entry.version, origin: entry.origin))
            }
        }
        current.sort { $0.version < $1.version }
        return current
    }
}
