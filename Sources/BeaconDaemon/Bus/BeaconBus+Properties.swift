import BeaconProtocol

extension BeaconBus {
    func handleProperties(_ call: VarlinkCall, client: BusClient) throws(VarlinkError) {
        let parameters = CallParameters(call)
        switch call.member {
        case "Get":
            try get(parameters, client: client)
        case "Set":
            try set(parameters, client: client)
        case "Unset":
            try unset(parameters, client: client)
        case "List":
            try list(parameters, client: client)
        case "Watch":
            guard call.more else { throw .expectedMore() }
            try watch(parameters, client: client)
        default:
            throw .methodNotImplemented(call.method)
        }
    }

    func parseKey(_ string: String) throws(VarlinkError) -> PropertyKey {
        do {
            return try PropertyKey(string, limits: limits.keyLimits)
        } catch {
            throw BusError.invalidKey(string, reason: error.reason)
        }
    }

    func parsePatterns(_ strings: [String], interface: String) throws(VarlinkError) -> [KeyPattern] {
        guard strings.count <= limits.maxPatterns else {
            throw BusError.limitExceeded("maxPatterns", maximum: limits.maxPatterns)
        }
        var patterns: [KeyPattern] = []
        patterns.reserveCapacity(strings.count)
        for string in strings {
            do {
                patterns.append(try KeyPattern(string, limits: limits.keyLimits))
            } catch {
                throw BusError.invalidPattern(interface, string, reason: error.reason)
            }
        }
        return patterns
    }

    static func isReserved(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { utf8 in
            var end = 0
            while end < utf8.count && utf8[end] != UInt8(ascii: ".") { end += 1 }
            // Cheap rejection before the comparison: every reserved first segment is 6 to 9 bytes long.
            guard (6...9).contains(end) else { return false }
            let first = UnsafeBufferPointer(rebasing: utf8[0..<end])
            return reservedPrefixes.contains { first.elementsEqual($0.utf8) }
        }
    }

    func get(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("key")
        // Every stored key was checked when it was set, so a name that finds one needs no check, as long as it is
        // ASCII like every key: Strings compare by canonical equivalence, and U+212A KELVIN SIGN equals "K". Any
        // other name is checked (and a non-ASCII one refused) like a name that finds nothing.
        guard Self.isASCII(name), let index = properties.index(forKey: name) else {
            _ = try parseKey(name)
            throw BusError.keyNotFound(name)
        }
        if let reply = properties.values[index].getReply {
            client.connection.sendEncoded { $0.append(contentsOf: reply) }
            return
        }
        var reply: [UInt8] = []
        JSONWriter.appendASCII("{\"parameters\":{\"property\":", to: &reply)
        encodeProperty(name, properties.values[index], into: &reply)
        JSONWriter.appendASCII("}}", to: &reply)
        reply.append(0)
        if reply.count <= Self.cachedGetReplyLimit {
            properties.values[index].getReply = reply
        }
        client.connection.sendEncoded { $0.append(contentsOf: reply) }
    }

    static func isASCII(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { $0.allSatisfy { $0 < 0x80 } }
    }

    func encodeProperty(_ key: String, _ entry: Entry, into buffer: inout [UInt8]) {
        JSONWriter.appendASCII("{\"key\":", to: &buffer)
        JSONWriter.appendString(key, to: &buffer)
        JSONWriter.appendASCII(",\"value\":", to: &buffer)
        buffer.append(contentsOf: entry.value)
        JSONWriter.appendASCII(",\"version\":", to: &buffer)
        JSONWriter.appendInt(entry.version, to: &buffer)
        JSONWriter.appendASCII(",\"modifiedUsec\":", to: &buffer)
        JSONWriter.appendInt(entry.modifiedUsec, to: &buffer)
        if entry.ephemeralOwner != nil {
            JSONWriter.appendASCII(",\"ephemeral\":true,\"origin\":", to: &buffer)
        } else {
            JSONWriter.appendASCII(",\"ephemeral\":false,\"origin\":", to: &buffer)
        }
        entry.origin.encode(into: &buffer)
        buffer.append(UInt8(ascii: "}"))
    }

    func set(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("key")
        let encoded = try parameters.encodedValue("value")
        let ifVersion = try parameters.optionalInt("ifVersion")
        let ephemeral = try parameters.bool("ephemeral", default: false)
        let key = try parseKey(name)
        guard !Self.isReserved(name) else { throw BusError.readOnly(name) }
        guard encoded.count <= limits.maxValueSize else {
            throw BusError.valueTooLarge(name, size: encoded.count, limit: limits.maxValueSize)
        }
        let index = properties.index(forKey: name)
        if let ifVersion {
            let actual = index.map { properties.values[$0].version } ?? 0
            guard actual == ifVersion else {
                throw BusError.versionMismatch(name, expected: ifVersion, actual: actual)
            }
        }
        let newVersion = store(
            key: key,
            value: encoded,
            at: index,
            ephemeralOwner: ephemeral ? client : nil,
            origin: client.origin,
            connection: client.connection
        )
        client.connection.reply("version", integer: newVersion)
    }

    /// Stores a value, queues its store writes and its change event; returns the change's version. `index` is the
    /// key's entry in ``properties``, if it has one.
    func store(
        key: PropertyKey,
        value: [UInt8],
        at index: [String: Entry].Index?,
        ephemeralOwner: BusClient?,
        origin: Origin,
        connection: VarlinkConnection?
    ) -> Int64 {
        let name = key.rawValue
        let newVersion = nextVersion()
        let now = Self.nowUsec()
        let old: [UInt8]?
        if let index {
            // Changed in place: the entry is neither copied out nor replaced whole.
            old = properties.values[index].value
            update(
                &properties.values[index], existed: true, name: name, value: value, version: newVersion, now: now,
                ephemeralOwner: ephemeralOwner, origin: origin, connection: connection)
        } else {
            old = nil
            var entry = Entry(
                value: value, version: newVersion, modifiedUsec: now, origin: origin, ephemeralOwner: nil,
                markedEphemeral: false)
            update(
                &entry, existed: false, name: name, value: value, version: newVersion, now: now,
                ephemeralOwner: ephemeralOwner, origin: origin, connection: connection)
            // A key has a tombstone only while it has no entry.
            if tombstones.removeValue(forKey: name) != nil {
                record(.deleteTombstone(key: name), by: connection)
            }
            properties[name] = entry
        }
        tickChanges.append(ChangeEvent(key: key, value: value, old: old, version: newVersion, origin: origin))
        requestFlush()
        return newVersion
    }

    /// Gives `entry` its new value and owner, and queues the store writes that follow; `existed` tells whether the
    /// entry was stored before this change. Touches no other entry of ``properties``.
    private func update(
        _ entry: inout Entry,
        existed: Bool,
        name: String,
        value: [UInt8],
        version: Int64,
        now: Int64,
        ephemeralOwner: BusClient?,
        origin: Origin,
        connection: VarlinkConnection?
    ) {
        let previousOwner = entry.ephemeralOwner
        if let previousOwner, previousOwner != ephemeralOwner?.connection.id {
            clients[previousOwner]?.ephemeralKeys.remove(name)
        }
        if let ephemeralOwner {
            let owner = ephemeralOwner.connection.id
            if previousOwner != owner {
                ephemeralOwner.ephemeralKeys.insert(name)
            }
            if existed && previousOwner == nil {
                record(.deleteProperty(key: name), by: connection)
            }
            if !entry.markedEphemeral {
                entry.markedEphemeral = true
                record(.markEphemeral(key: name), by: connection)
            }
            entry.ephemeralOwner = owner
            entry.upsertPosition = -1
        } else {
            if entry.markedEphemeral {
                entry.markedEphemeral = false
                record(.unmarkEphemeral(key: name), by: connection)
            }
            entry.ephemeralOwner = nil
            entry.upsertPosition = recordUpsert(
                StoredProperty(key: name, value: value, version: version, modifiedUsec: now, origin: origin),
                replacing: entry.upsertPosition,
                by: connection
            )
        }
        if existed {
            entry.value = value
            entry.version = version
            entry.modifiedUsec = now
            entry.origin = origin
            entry.getReply = nil
        }
    }

    func unset(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("key")
        let ifVersion = try parameters.optionalInt("ifVersion")
        _ = try parseKey(name)
        guard !Self.isReserved(name) else { throw BusError.readOnly(name) }
        guard let entry = properties[name] else {
            if let ifVersion, ifVersion != 0 {
                throw BusError.versionMismatch(name, expected: ifVersion, actual: 0)
            }
            throw BusError.keyNotFound(name)
        }
        if let ifVersion, ifVersion != entry.version {
            throw BusError.versionMismatch(name, expected: ifVersion, actual: entry.version)
        }
        let deletion = delete(key: name, entry: entry, origin: client.origin, connection: client.connection)
        client.connection.reply("version", integer: deletion)
    }

    /// Deletes a property, leaving a tombstone for `since` replays; returns the deletion's version.
    @discardableResult
    func delete(key name: String, entry: Entry, origin: Origin, connection: VarlinkConnection? = nil) -> Int64 {
        let deletion = nextVersion()
        let now = Self.nowUsec()
        properties[name] = nil
        if let owner = entry.ephemeralOwner {
            clients[owner]?.ephemeralKeys.remove(name)
        } else {
            record(.deleteProperty(key: name), by: connection)
        }
        if entry.markedEphemeral {
            record(.unmarkEphemeral(key: name), by: connection)
        }
        tombstones[name] = Tombstone(version: deletion, modifiedUsec: now, origin: origin)
        record(
            .upsertTombstone(StoredTombstone(key: name, version: deletion, modifiedUsec: now, origin: origin)),
            by: connection
        )
        pruneHistoryIfNeeded()
        // Keys in the registry were validated when they were stored.
        if let key = try? PropertyKey(name, limits: KeyLimits(maxLength: Int.max, maxDepth: Int.max)) {
            tickChanges.append(ChangeEvent(key: key, value: nil, old: entry.value, version: deletion, origin: origin))
        }
        requestFlush()
        return deletion
    }

    /// Forgets the oldest deletions beyond the history limit; replays from before them resync.
    private func pruneHistoryIfNeeded() {
        guard tombstones.count > historyLimit + max(1, historyLimit / 10) else { return }
        let sorted = tombstones.sorted { $0.value.version < $1.value.version }
        let drop = sorted.count - historyLimit
        for (key, _) in sorted.prefix(drop) {
            tombstones[key] = nil
        }
        historyFloor = sorted[drop - 1].value.version
        record(.pruneTombstones(upToVersion: historyFloor), by: nil)
        record(.setMeta(name: "historyFloor", value: historyFloor), by: nil)
    }

    private func list(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let prefixName = try parameters.optionalString("prefix") ?? ""
        let prefix = prefixName.isEmpty ? nil : try parseKey(prefixName)
        var keys: [PropertyKey] = []
        for name in properties.keys {
            guard let prefix else {
                keys.append(Self.trustedKey(name))
                continue
            }
            guard name.utf8.starts(with: prefix.rawValue.utf8) else { continue }
            let key = Self.trustedKey(name)
            if key.hasPrefix(prefix) { keys.append(key) }
        }
        keys.sort()
        client.connection.sendEncoded { buffer in
            JSONWriter.appendASCII("{\"parameters\":{\"properties\":[", to: &buffer)
            for (index, key) in keys.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                encodeProperty(key.rawValue, properties[key.rawValue]!, into: &buffer)
            }
            JSONWriter.appendASCII("],\"version\":", to: &buffer)
            JSONWriter.appendInt(version, to: &buffer)
            JSONWriter.appendASCII("}}", to: &buffer)
            buffer.append(0)
        }
    }

    /// A key already validated when it was stored.
    static func trustedKey(_ name: String) -> PropertyKey {
        // Registry keys passed validation with limits at least as strict as these.
        (try? PropertyKey(name, limits: KeyLimits(maxLength: Int.max, maxDepth: Int.max)))!
    }

    private func watch(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let patterns = try parsePatterns(try parameters.stringArray("patterns"), interface: "io.beacon.Properties")
        let initial = try parameters.bool("initial", default: false)
        let old = try parameters.bool("old", default: false)
        let since = try parameters.optionalInt("since")
        let subscription = Subscription(kind: .watch(old: old), patterns: patterns, client: client, start: version)
        var changes: [ChangeEvent] = []
        var resync = false
        func matches(_ key: PropertyKey) -> Bool { patterns.contains { $0.matches(key) } }
        if let since, since >= historyFloor, since <= version {
            // Every key changed after `since`, once, with its latest state, in version order.
            var replay: [ChangeEvent] = []
            for (name, entry) in properties where entry.version > since {
                let key = Self.trustedKey(name)
                if matches(key) {
                    replay.append(
                        ChangeEvent(
                            key: key, value: entry.value, old: nil, version: entry.version, origin: entry.origin)
                    )
                }
            }
            for (name, tombstone) in tombstones where tombstone.version > since {
                let key = Self.trustedKey(name)
                if matches(key) {
                    replay.append(
                        ChangeEvent(
                            key: key, value: nil, old: nil, version: tombstone.version, origin: tombstone.origin)
                    )
                }
            }
            replay.sort { $0.version < $1.version }
            changes = replay
        } else if since != nil || initial {
            resync = since != nil
            var current: [ChangeEvent] = []
            for (name, entry) in properties {
                let key = Self.trustedKey(name)
                if matches(key) {
                    current.append(
                        ChangeEvent(
                            key: key, value: entry.value, old: nil, version: entry.version, origin: entry.origin)
                    )
                }
            }
            current.sort { $0.version < $1.version }
            changes = current
        }
        addSubscription(subscription)
        let current = version
        client.connection.sendEncoded { buffer in
            StreamReply.changes(
                0..<Int32(changes.count), of: changes, includingOld: false, version: current, resync: resync,
                into: &buffer)
        }
        client.connection.beginStream()
    }
}
