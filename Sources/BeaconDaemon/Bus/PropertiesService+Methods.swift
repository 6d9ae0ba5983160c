import BeaconProtocol

/// The methods of `io.beacon.Properties`. Get, Set and Unset are also answered read in place
/// (``BusMethods/handleInPlace(_:client:bus:)``).
extension PropertiesService {
    func get(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let (name, isASCII) = try parameters.stringNotingASCII("key")
        // Every stored key was checked when it was set, so a name that finds one needs no check, as long as it is
        // ASCII like every key: Strings compare by canonical equivalence, and U+212A KELVIN SIGN equals "K". Any
        // other name is checked (and a non-ASCII one refused) like a name that finds nothing.
        guard isASCII, let index = try table.index(forKey: name) else {
            _ = try limits.parseKey(name)
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

    func set(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("key")
        let encoded = try parameters.encodedValue("value")
        let ifVersion = try parameters.optionalInt("ifVersion")
        let ephemeral = try parameters.bool("ephemeral", default: false)
        let key = try limits.parseKey(name)
        guard !BusNames.isReserved(name) else { throw BusError.readOnly(name) }
        guard encoded.count <= limits.maxValueSize else {
            throw BusError.valueTooLarge(name, size: encoded.count, limit: limits.maxValueSize)
        }
        let index = try table.index(forKey: name)
        var rule = SettingsOverlay.Rule.unknown
        if hasSettings { rule = try checkSet(name, encoded, at: index) }
        if providers.hasClaims,
            try providers.forwardToProvider(
                method: .set, key: name, value: encoded, ifVersion: ifVersion, ephemeral: ephemeral, client: client)
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
        _ = try limits.parseKey(name)
        guard !BusNames.isReserved(name) else { throw BusError.readOnly(name) }
        if hasSettings { try checkUnset(name) }
        if providers.hasClaims,
            try providers.forwardToProvider(
                method: .unset, key: name, value: nil, ifVersion: ifVersion, ephemeral: false, client: client)
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
        let prefix = prefixName.isEmpty ? nil : try limits.parseKey(prefixName)
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
        let patterns = try limits.parsePatterns(
            try parameters.stringArray("patterns"), interface: IOBeaconProperties.name)
        let initial = try parameters.bool("initial", default: false)
        let old = try parameters.bool("old", default: false)
        let origin = try parameters.bool("origin", default: true)
        let since = try parameters.optionalInt("since")
        let current = table.version
        let delivery = try parameters.deliveryOptions()
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
        try transaction.subscribe(subscription)
        client.connection.sendEncoded { buffer in
            StreamReply.changes(
                0..<Int32(changes.count), of: changes, includingOld: false, includingOrigin: origin, version: current,
                resync: resync, into: &buffer)
        }
        client.connection.beginStream()
    }
}

extension PropertiesService: IOBeaconProperties.Handlers {}
