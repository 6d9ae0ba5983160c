import BeaconProtocol

/// The subtrees whose Sets and Unsets a client decides (`io.beacon.Providers`), and the requests forwarded to
/// their providers that wait for an answer.
final class ProviderRegistry {
    /// A registered provider: its Provide call's connection, the roots of its subtrees, and whether it can reach
    /// where their values live.
    struct Provider {
        let client: BusClient
        let roots: [String]
        /// Set while the provider reports that it cannot carry out writes (SetAvailable).
        var unavailable: Unavailability?
        /// The keys published so far by a resync given in parts (Publish with `more`), until its last part.
        var resyncing: Set<String>?
    }

    /// Why writes of a subtree fail, and since when.
    struct Unavailability {
        var reason: String
        var sinceUsec: Int64
    }

    /// A forwarded Set or Unset.
    struct Request {
        let provider: Int
        /// The connection that waits for the answer; `nil` when none does.
        let caller: BusClient?
        let key: String
        /// The caller asked for an ephemeral Set.
        let ephemeral: Bool
        /// The caller's `ifVersion`, which a VersionMismatch answer reports.
        let ifVersion: Int64?
    }

    /// By the connection id of their Provide call.
    var byConnection: [Int: Provider] = [:]
    /// Subtrees with no provider, with why: their provider went away, or the configuration expects one
    /// (`fleet.prefixes`). Their writes fail until a provider registers them.
    var orphans: [String: Unavailability] = [:]
    var requests: [Int64: Request] = [:]
    var nextRequest: Int64 = 1
    /// The providerVersion of each provided key's current value or deletion.
    var providerVersions: [String: Int64] = [:]
    /// The provided keys each connection set as ephemeral, which go when it closes.
    var ephemeralKeys: [Int: Set<String>] = [:]

    static func contains(_ root: String, _ key: String) -> Bool {
        key.utf8.count > root.utf8.count + 1 && key.hasPrefix(root)
            && key.utf8[key.utf8.index(key.utf8.startIndex, offsetBy: root.utf8.count)] == UInt8(ascii: ".")
    }

    static func overlap(_ a: String, _ b: String) -> Bool {
        a == b || contains(a, b) || contains(b, a)
    }

    /// Who decides the writes of a key.
    enum Claim {
        /// The provider registered on connection `id`.
        case provider(id: Int, Provider)
        /// Nobody: the subtree has no provider, for `reason`.
        case orphaned(reason: String)
    }

    /// Who decides the writes of `key`; `nil` for a key outside every provided subtree.
    func claim(of key: String) -> Claim? {
        for (id, provider) in byConnection where provider.roots.contains(where: { Self.contains($0, key) }) {
            return .provider(id: id, provider)
        }
        for (root, orphan) in orphans where Self.contains(root, key) {
            return .orphaned(reason: orphan.reason)
        }
        return nil
    }

    /// Why writes of `key` fail, when it lies in a subtree with no provider or with an unavailable one.
    func unavailability(of key: String) -> Unavailability? {
        for provider in byConnection.values where provider.roots.contains(where: { Self.contains($0, key) }) {
            return provider.unavailable
        }
        for (root, orphan) in orphans where Self.contains(root, key) { return orphan }
        return nil
    }

    /// Whether any provided subtree is without a working provider: what every Get checks.
    var anyUnavailable: Bool {
        !orphans.isEmpty || byConnection.values.contains { $0.unavailable != nil }
    }
}

extension BusError {
    static func providerUnavailable(_ key: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: "io.beacon.Providers.ProviderUnavailable",
            parameters: ["key": .string(key), "reason": .string(reason)])
    }

    static func providerConflict(_ pattern: String) -> VarlinkError {
        VarlinkError(name: "io.beacon.Providers.ProviderConflict", parameters: ["pattern": .string(pattern)])
    }

    static func notProvider(_ provider: Int64, reason: String) -> VarlinkError {
        VarlinkError(
            name: "io.beacon.Providers.NotProvider",
            parameters: ["provider": .int(provider), "reason": .string(reason)])
    }
}

extension BeaconBus {
    // MARK: Forwarding

    /// Forwards a Set or Unset of a provided key to its provider, and answers the call when the provider does;
    /// returns false when no provider claims the key. `ifVersion` is checked against the key's version here.
    func forwardToProvider(
        method: String, key: String, value: [UInt8]?, ifVersion: Int64?, ephemeral: Bool, client: BusClient
    ) throws(VarlinkError) -> Bool {
        let id: Int
        let provider: ProviderRegistry.Provider
        switch providers.claim(of: key) {
        case nil: return false
        case .orphaned(let reason)?: throw BusError.providerUnavailable(key, reason: reason)
        case .provider(let found, let registered)?: (id, provider) = (found, registered)
        }
        if let unavailable = provider.unavailable {
            throw BusError.providerUnavailable(key, reason: unavailable.reason)
        }
        var ifProviderVersion: Int64?
        if let ifVersion {
            let actual = table.entries[key]?.version ?? 0
            guard actual == ifVersion else { throw BusError.versionMismatch(key, expected: ifVersion, actual: actual) }
            if actual == 0 {
                ifProviderVersion = 0
            } else if let known = providers.providerVersions[key] {
                ifProviderVersion = known
            } else {
                throw BusError.providerUnavailable(key, reason: "the provider has not published this key yet")
            }
        }
        let waits = client.connection.deferReply()
        sendRequest(
            to: id, provider, method: method, key: key, value: value, ifVersion: ifVersion,
            ifProviderVersion: ifProviderVersion, ephemeral: ephemeral, caller: waits ? client : nil,
            origin: client.origin)
        if ephemeral, method == "Set" {
            providers.ephemeralKeys[client.connection.id, default: []].insert(key)
        }
        return true
    }

    private func sendRequest(
        to id: Int, _ provider: ProviderRegistry.Provider, method: String, key: String, value: [UInt8]?,
        ifVersion: Int64? = nil, ifProviderVersion: Int64?, ephemeral: Bool, caller: BusClient?, origin: Origin
    ) {
        let number = providers.nextRequest
        providers.nextRequest += 1
        providers.requests[number] = ProviderRegistry.Request(
            provider: id, caller: caller, key: key, ephemeral: ephemeral, ifVersion: ifVersion)
        provider.client.connection.sendEncoded { buffer in
            JSONWriter.appendASCII("{\"parameters\":{\"requests\":[{\"id\":", to: &buffer)
            JSONWriter.appendInt(number, to: &buffer)
            JSONWriter.appendASCII(",\"method\":", to: &buffer)
            JSONWriter.appendString(method, to: &buffer)
            JSONWriter.appendASCII(",\"key\":", to: &buffer)
            JSONWriter.appendString(key, to: &buffer)
            if let value {
                JSONWriter.appendASCII(",\"value\":", to: &buffer)
                buffer.append(contentsOf: value)
            }
            if let ifProviderVersion {
                JSONWriter.appendASCII(",\"ifProviderVersion\":", to: &buffer)
                JSONWriter.appendInt(ifProviderVersion, to: &buffer)
            }
            if ephemeral { JSONWriter.appendASCII(",\"ephemeral\":true", to: &buffer) }
            JSONWriter.appendASCII(caller == nil ? ",\"answered\":false" : ",\"answered\":true", to: &buffer)
            JSONWriter.appendASCII(",\"origin\":", to: &buffer)
            origin.encode(into: &buffer)
            JSONWriter.appendASCII("}]},\"continues\":true}", to: &buffer)
            buffer.append(0)
        }
    }

    /// A connection closed: a provider's subtrees become orphans and its callers get ProviderUnavailable; a
    /// caller's ephemeral provided keys are unset through their provider.
    func providerConnectionClosed(_ client: BusClient) {
        let id = client.connection.id
        if let keys = providers.ephemeralKeys.removeValue(forKey: id) {
            for key in keys.sorted() {
                guard case .provider(let owner, let provider)? = providers.claim(of: key) else { continue }
                sendRequest(
                    to: owner, provider, method: "Unset", key: key, value: nil, ifProviderVersion: nil,
                    ephemeral: false, caller: nil, origin: client.origin)
            }
        }
        guard let provider = providers.byConnection.removeValue(forKey: id) else { return }
        let reason = "the provider (pid \(client.origin.pid)) disconnected"
        let orphaned = ProviderRegistry.Unavailability(reason: reason, sinceUsec: WallClock.nowUsec())
        for root in provider.roots { providers.orphans[root] = orphaned }
        refreshProviderAvailability()
        for (number, request) in providers.requests where request.provider == id {
            providers.requests.removeValue(forKey: number)
            let error = BusError.providerUnavailable(request.key, reason: reason)
            request.caller?.connection.answerDeferred { $0.reply(error: error) }
        }
        for root in provider.roots {
            for key in providers.providerVersions.keys where ProviderRegistry.contains(root, key) {
                providers.providerVersions.removeValue(forKey: key)
            }
        }
        logger.notice(
            "a provider disconnected; writes of its subtrees fail until one registers them again",
            metadata: ["subtrees": "\(provider.roots.map { $0 + ".**" })", "pid": "\(client.origin.pid)"])
    }

    // MARK: Methods

    func provide(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let patterns = try parsePatterns(try parameters.stringArray("patterns"), interface: "io.beacon.Providers")
        var roots: [String] = []
        for pattern in patterns {
            let text = pattern.rawValue
            guard text.hasSuffix(".**"), !text.dropLast(3).contains("*") else {
                throw BusError.invalidPattern(
                    "io.beacon.Providers", text, reason: "a provider's pattern is a key followed by .**")
            }
            let root = String(text.dropLast(3))
            guard !Self.isReserved(root) else { throw BusError.readOnly(root) }
            guard !roots.contains(where: { ProviderRegistry.overlap($0, root) }) else {
                throw BusError.providerConflict(text)
            }
            roots.append(root)
        }
        guard !roots.isEmpty else { throw .invalidParameter("patterns") }
        let unavailableReason = try parameters.optionalString("unavailable")
        guard providers.byConnection[client.connection.id] == nil else {
            throw BusError.providerConflict(roots[0] + ".**")
        }
        for (_, other) in providers.byConnection {
            if let clash = roots.first(where: { root in other.roots.contains { ProviderRegistry.overlap($0, root) } }) {
                throw BusError.providerConflict(clash + ".**")
            }
        }
        // A provider that starts unavailable keeps the time since which its orphaned subtrees were.
        var since: Int64?
        for (orphan, state) in providers.orphans where roots.contains(where: { ProviderRegistry.overlap($0, orphan) }) {
            since = min(since ?? state.sinceUsec, state.sinceUsec)
            providers.orphans.removeValue(forKey: orphan)
        }
        providers.byConnection[client.connection.id] = ProviderRegistry.Provider(
            client: client, roots: roots,
            unavailable: unavailableReason.map {
                ProviderRegistry.Unavailability(reason: $0, sinceUsec: since ?? WallClock.nowUsec())
            })
        hasProviders = true
        refreshProviderAvailability()
        client.connection.reply(["provider": .int(Int64(client.connection.id)), "requests": []], continues: true)
        client.connection.beginStream()
        logger.info(
            "provider registered",
            metadata: ["subtrees": "\(roots.map { $0 + ".**" })", "pid": "\(client.origin.pid)"])
    }

    /// The provider that `parameters` names, when it belongs to `client`'s user.
    private func namedProvider(
        _ parameters: CallParameters, client: BusClient
    ) throws(VarlinkError) -> (id: Int, provider: ProviderRegistry.Provider) {
        guard let number = try parameters.optionalInt("provider") else { throw .invalidParameter("provider") }
        guard let provider = providers.byConnection[Int(truncatingIfNeeded: number)],
            provider.client.origin.uid == client.origin.uid
        else { throw BusError.notProvider(number, reason: "no such provider of this user") }
        return (Int(truncatingIfNeeded: number), provider)
    }

    func answer(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let (id, provider) = try namedProvider(parameters, client: client)
        guard let number = try parameters.optionalInt("id") else { throw .invalidParameter("id") }
        guard let request = providers.requests[number], request.provider == id else {
            throw BusError.notProvider(Int64(id), reason: "request \(number) is not pending")
        }
        if let error = try parameters.optionalString("error") {
            guard VarlinkNames.isValidQualifiedMemberName(error) else { throw .invalidParameter("error") }
            var errorParameters: [String: JSONValue] = [:]
            if case .object(let members)? = parameters.optionalValue("errorParameters") { errorParameters = members }
            if error == "io.beacon.Properties.VersionMismatch", let expected = request.ifVersion {
                // The provider compared its own versions; the caller knows this daemon's.
                errorParameters = [
                    "key": .string(request.key), "expected": .int(expected),
                    "actual": .int(table.entries[request.key]?.version ?? 0),
                ]
            }
            let reply = VarlinkError(name: error, parameters: errorParameters)
            providers.requests.removeValue(forKey: number)
            if request.ephemeral, let caller = request.caller {
                providers.ephemeralKeys[caller.connection.id]?.remove(request.key)
            }
            request.caller?.connection.answerDeferred { $0.reply(error: reply) }
        } else {
            guard let change = parameters.optionalValue("change") else { throw .invalidParameter("change") }
            let published = try parsePublished(change, provider: provider)
            guard published.key.rawValue == request.key else {
                throw BusError.notProvider(Int64(id), reason: "the change is of another key than request \(number)")
            }
            providers.requests.removeValue(forKey: number)
            let version = applyPublished(published)
            request.caller?.connection.answerDeferred { $0.reply("version", integer: version) }
        }
        client.connection.reply([:])
    }

    func setAvailable(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let (id, provider) = try namedProvider(parameters, client: client)
        guard case .bool(let available)? = parameters.optionalValue("available") else {
            throw .invalidParameter("available")
        }
        if available {
            if provider.unavailable != nil {
                logger.notice(
                    "a provider is available again", metadata: ["subtrees": "\(provider.roots.map { $0 + ".**" })"])
            }
            providers.byConnection[id]?.unavailable = nil
        } else {
            let reason = try parameters.optionalString("reason") ?? "the provider is unavailable"
            if provider.unavailable?.reason != reason {
                logger.notice(
                    "a provider is unavailable; writes of its subtrees fail",
                    metadata: ["subtrees": "\(provider.roots.map { $0 + ".**" })", "reason": "\(reason)"])
            }
            let since = provider.unavailable?.sinceUsec ?? WallClock.nowUsec()
            providers.byConnection[id]?.unavailable = ProviderRegistry.Unavailability(reason: reason, sinceUsec: since)
        }
        refreshProviderAvailability()
        client.connection.reply([:])
    }

    /// Claims the configured subtrees (`fleet.prefixes`), at start-up, for a provider that has not registered yet,
    /// so that their writes fail instead of being stored locally.
    func expectProviders(of roots: [String]) {
        let since = WallClock.nowUsec()
        for root in roots {
            providers.orphans[root] = ProviderRegistry.Unavailability(
                reason: "no provider has registered yet (the configuration names \(root).** in fleet.prefixes)",
                sinceUsec: since)
        }
        hasProviders = true
        refreshProviderAvailability()
    }

    func refreshProviderAvailability() {
        hasUnavailableProviders = providers.anyUnavailable
    }

    /// The provided subtrees, for Status: who provides each, and whether its writes work.
    func providerStatus() -> [JSONValue] {
        var states: [JSONValue] = []
        for (id, provider) in providers.byConnection.sorted(by: { $0.key < $1.key }) {
            var state: [String: JSONValue] = [
                "subtrees": .array(provider.roots.map { .string($0 + ".**") }), "provider": .int(Int64(id)),
                "pid": .int(Int64(provider.client.origin.pid)), "available": .bool(provider.unavailable == nil),
            ]
            if let command = provider.client.origin.command { state["command"] = .string(command) }
            if let unavailable = provider.unavailable {
                state["reason"] = .string(unavailable.reason)
                state["sinceUsec"] = .int(unavailable.sinceUsec)
            }
            states.append(.object(state))
        }
        for (root, orphan) in providers.orphans.sorted(by: { $0.key < $1.key }) {
            states.append(
                .object([
                    "subtrees": .array([.string(root + ".**")]), "available": .bool(false),
                    "reason": .string(orphan.reason), "sinceUsec": .int(orphan.sinceUsec),
                ]))
        }
        return states
    }

    func publish(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let (id, provider) = try namedProvider(parameters, client: client)
        let elements = try parameters.array("changes")
        let resync = try parameters.bool("resync", default: false)
        let more = try parameters.bool("more", default: false)
        guard resync || !more else { throw .invalidParameter("more") }
        var changes: [PublishedChange] = []
        changes.reserveCapacity(elements.count)
        for element in elements { changes.append(try parsePublished(element, provider: provider)) }
        for change in changes { _ = applyPublished(change) }
        if resync {
            // A resync too large for one message comes in parts; the keys it did not name go after the last.
            var published = provider.resyncing ?? []
            published.formUnion(changes.map(\.key.rawValue))
            providers.byConnection[id]?.resyncing = more ? published : nil
            guard !more else {
                client.connection.reply("version", integer: table.version)
                return
            }
            for root in provider.roots {
                guard let prefix = try? PropertyKey(root, limits: limits.keyLimits) else { continue }
                for key in table.keys(below: prefix) where key.rawValue != root && !published.contains(key.rawValue) {
                    delete(key.rawValue, origin: provider.client.origin)
                    providers.providerVersions.removeValue(forKey: key.rawValue)
                }
            }
        }
        client.connection.reply("version", integer: table.version)
    }

    struct PublishedChange {
        var key: PropertyKey
        var value: [UInt8]?
        var providerVersion: Int64
        var origin: Origin
    }

    private func parsePublished(
        _ change: JSONValue, provider: ProviderRegistry.Provider
    ) throws(VarlinkError) -> PublishedChange {
        guard case .object(let members) = change, case .string(let name)? = members["key"],
            case .int(let providerVersion)? = members["providerVersion"]
        else { throw .invalidParameter("changes") }
        let key = try parseKey(name)
        guard provider.roots.contains(where: { ProviderRegistry.contains($0, key.rawValue) }) else {
            throw BusError.notProvider(Int64(provider.client.connection.id), reason: "\(name) is outside its subtrees")
        }
        var value: [UInt8]?
        if let given = members["value"], given != .null {
            var bytes: [UInt8] = []
            given.encode(into: &bytes)
            guard bytes.count <= limits.maxValueSize else {
                throw BusError.valueTooLarge(name, size: bytes.count, limit: limits.maxValueSize)
            }
            value = bytes
        }
        var origin = provider.client.origin
        if case .object(let fields)? = members["origin"] {
            func int(_ name: String) -> Int64? { if case .int(let v)? = fields[name] { v } else { nil } }
            func string(_ name: String) -> String? { if case .string(let v)? = fields[name] { v } else { nil } }
            origin = Origin(
                uid: UInt32(truncatingIfNeeded: int("uid") ?? 0), pid: Int32(truncatingIfNeeded: int("pid") ?? 0),
                command: string("command"), machine: string("machine"))
        }
        return PublishedChange(key: key, value: value, providerVersion: providerVersion, origin: origin)
    }

    /// Applies a published change unless it is older than the key's last one; returns the key's version after it.
    private func applyPublished(_ change: PublishedChange) -> Int64 {
        let name = change.key.rawValue
        let current = table.entries[name]?.version ?? 0
        if let known = providers.providerVersions[name], change.providerVersion <= known { return current }
        providers.providerVersions[name] = change.providerVersion
        guard let value = change.value else {
            return delete(name, origin: change.origin) ?? current
        }
        let index = table.entries.index(forKey: name)
        if let index, table.entries.values[index].holds(value, ownedBy: nil) { return current }
        return store(key: change.key, value: value, at: index, ephemeralOwner: nil, origin: change.origin)
    }
}
