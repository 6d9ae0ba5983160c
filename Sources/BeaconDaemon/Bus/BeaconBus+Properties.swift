import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension BeaconBus {
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
        let (name, isASCII) = try parameters.stringNotingASCII("key")
        // Every stored key was checked when it was set, so a name that finds one needs no check, as long as it is
        // ASCII like every key: Strings compare by canonical equivalence, and U+212A KELVIN SIGN equals "K". Any
        // other name is checked (and a non-ASCII one refused) like a name that finds nothing.
        guard isASCII, let index = try table.index(forKey: name) else {
            _ = try parseKey(name)
            if hasSettings, getUnstored(name, client: client) { return }
            throw BusError.keyNotFound(name)
        }
        // A provided key whose provider cannot write says so in its reply, which is then not cached.
        let unavailable = providers.hasUnavailable ? providers.unavailability(of: name) : nil
        if unavailable == nil, let reply = table.entries.values[index].cachedGetReply() {
            client.connection.sendEncoded { $0.append(contentsOf: reply) }
            return
        }
        var reply: [UInt8] = []
        JSONWriter.appendASCII("{\"parameters\":{\"property\":", to: &reply)
        encodeProperty(name, table.entries.values[index], into: &reply)
        if let unavailable {
            JSONWriter.appendASCII(",\"unavailable\":{\"reason\":", to: &reply)
            JSONWriter.appendString(unavailable.reason, to: &reply)
            JSONWriter.appendASCII(",\"sinceUsec\":", to: &reply)
            JSONWriter.appendInt(unavailable.sinceUsec, to: &reply)
            JSONWriter.appendASCII("}", to: &reply)
        }
        JSONWriter.appendASCII("}}", to: &reply)
        reply.append(0)
        if unavailable == nil, reply.count <= PropertyTable.cachedGetReplyLimit {
            table.entries.values[index].getReply = reply
        }
        client.connection.sendEncoded { $0.append(contentsOf: reply) }
    }

    /// Whether two compact JSON texts are the same: what a Get would return does not change. Objects keep their
    /// members' order, so the same members in another order are another text. Compared with `memcmp`: a Set of a
    /// new value pays a few instructions for it, not a walk over the bytes.
    static func sameValue(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }

    static func isASCII(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { isASCII($0) }
    }

    /// Whether every byte is below 0x80, eight at a time.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var index = 0
        var high: UInt64 = 0
        while index &+ 8 <= bytes.count {
            high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index &+= 8
        }
        while index < bytes.count {
            high |= UInt64(base[index])
            index &+= 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    func encodeProperty(_ key: String, _ entry: PropertyTable.Entry, into buffer: inout [UInt8]) {
        guard !hasSettings else { return encodeStoredProperty(key, entry, into: &buffer) }
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
        let index = try table.index(forKey: name)
        var rule = SettingsOverlay.Rule.unknown
        if hasSettings { rule = try checkSet(name, encoded, at: index) }
        if providers.hasClaims,
            try providers.forwardToProvider(
                method: "Set", key: name, value: encoded, ifVersion: ifVersion, ephemeral: ephemeral, client: client)
        {
            return
        }
        if let ifVersion {
            let actual = index.map { table.entries.values[$0].version } ?? 0
            guard actual == ifVersion else {
                throw BusError.versionMismatch(name, expected: ifVersion, actual: actual)
            }
        }
        // A write that changes nothing is silent: no version, no change event.
        if let index, table.entries.values[index].holds(encoded, ownedBy: ephemeral ? client.connection.id : nil) {
            let version = table.entries.values[index].version
            client.connection.sendEncoded { buffer in
                JSONWriter.appendASCII("{\"parameters\":{\"version\":", to: &buffer)
                JSONWriter.appendInt(version, to: &buffer)
                JSONWriter.appendASCII(",\"unchanged\":true}}", to: &buffer)
                buffer.append(0)
            }
            return
        }
        let newVersion = store(
            key: key,
            value: encoded,
            at: index,
            ephemeralOwner: ephemeral ? client.connection.id : nil,
            origin: client.origin,
            rule: rule
        )
        client.connection.reply("version", integer: newVersion)
    }

    func unset(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("key")
        let ifVersion = try parameters.optionalInt("ifVersion")
        _ = try parseKey(name)
        guard !Self.isReserved(name) else { throw BusError.readOnly(name) }
        if hasSettings { try checkUnset(name) }
        if providers.hasClaims,
            try providers.forwardToProvider(
                method: "Unset", key: name, value: nil, ifVersion: ifVersion, ephemeral: false, client: client)
        {
            return
        }
        guard let entry = try table.entry(name) else {
            if let ifVersion, ifVersion != 0 {
                throw BusError.versionMismatch(name, expected: ifVersion, actual: 0)
            }
            throw BusError.keyNotFound(name)
        }
        if let ifVersion, ifVersion != entry.version {
            throw BusError.versionMismatch(name, expected: ifVersion, actual: entry.version)
        }
        let deletion = try delete(name, origin: client.origin) ?? entry.version
        client.connection.reply("version", integer: deletion)
    }

    func list(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let prefixName = try parameters.optionalString("prefix") ?? ""
        let prefix = prefixName.isEmpty ? nil : try parseKey(prefixName)
        // Read from the store in the prefix's range, without keeping the rows in memory.
        var found: [(key: PropertyKey, entry: PropertyTable.Entry?)] = try table.entries(below: prefix).map {
            ($0.key, $0.entry)
        }
        let unstored = try unstoredKeys(below: prefix)
        if !unstored.isEmpty {
            found += unstored.map { ($0, nil) }
            found.sort { $0.key < $1.key }
        }
        let version = table.version
        client.connection.sendEncoded { buffer in
            JSONWriter.appendASCII("{\"parameters\":{\"properties\":[", to: &buffer)
            for (index, (key, entry)) in found.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                if let entry {
                    encodeProperty(key.rawValue, entry, into: &buffer)
                } else {
                    _ = encodeUnstoredProperty(key.rawValue, into: &buffer)
                }
            }
            JSONWriter.appendASCII("],\"version\":", to: &buffer)
            JSONWriter.appendInt(version, to: &buffer)
            JSONWriter.appendASCII("}}", to: &buffer)
            buffer.append(0)
        }
    }

    func watch(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let patterns = try parsePatterns(try parameters.stringArray("patterns"), interface: IOBeaconProperties.name)
        let initial = try parameters.bool("initial", default: false)
        let old = try parameters.bool("old", default: false)
        let origin = try parameters.bool("origin", default: true)
        let since = try parameters.optionalInt("since")
        let current = table.version
        let delivery = try deliveryOptions(parameters)
        let subscription = Subscription(
            kind: .watch(old: old, origin: origin), patterns: patterns, client: client, start: current,
            policy: delivery.policy, followsSession: delivery.followsSession)
        func matches(_ key: PropertyKey) -> Bool { patterns.contains { $0.matches(key) } }
        var changes: [ChangeEvent] = []
        var resync = false
        if let since, let replay = try table.changes(since: since, matching: matches) {
            changes = try throughSettings(replay, since: since, matching: matches)
        } else if since != nil || initial {
            resync = since != nil
            changes = try throughSettings(table.snapshot(matching: patterns), since: nil, matching: matches)
        }
        try addSubscription(subscription)
        client.connection.sendEncoded { buffer in
            StreamReply.changes(
                0..<Int32(changes.count), of: changes, includingOld: false, includingOrigin: origin, version: current,
                resync: resync, into: &buffer)
        }
        client.connection.beginStream()
    }
}
