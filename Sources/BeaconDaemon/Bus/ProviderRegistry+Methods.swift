import BeaconProtocol
import NIOCore
import VarlinkServer

extension ProviderRegistry {
    // MARK: Methods

    func provide(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        guard let host else { throw BusError.providerUnavailable("", reason: "the daemon is stopping") }
        let patterns = try host.limits.parsePatterns(
            try parameters.stringArray("patterns"), interface: IOBeaconProviders.name)
        var roots: [String] = []
        for pattern in patterns {
            let text = pattern.rawValue
            guard text.hasSuffix(".**"), !text.dropLast(3).contains("*") else {
                throw BusError.invalidPattern(
                    IOBeaconProviders.name, text, reason: "a provider's pattern is a key followed by .**")
            }
            let root = String(text.dropLast(3))
            guard !BusNames.isReserved(root) else { throw BusError.readOnly(root) }
            guard !roots.contains(where: { ProviderRegistry.overlap($0, root) }) else {
                throw BusError.providerConflict(text)
            }
            roots.append(root)
        }
        guard !roots.isEmpty else { throw .invalidParameter("patterns") }
        let unavailableReason = try parameters.optionalString("unavailable")
        guard byConnection[client.connection.id] == nil else {
            throw BusError.providerConflict(roots[0] + ".**")
        }
        for (_, other) in byConnection {
            if let clash = roots.first(where: { root in other.roots.contains { ProviderRegistry.overlap($0, root) } }) {
                throw BusError.providerConflict(clash + ".**")
            }
        }
        // A provider that starts unavailable keeps the time since which its orphaned subtrees were.
        var since: Int64?
        for (orphan, state) in orphans where roots.contains(where: { ProviderRegistry.overlap($0, orphan) }) {
            since = min(since ?? state.sinceUsec, state.sinceUsec)
            orphans.removeValue(forKey: orphan)
        }
        byConnection[client.connection.id] = ProviderRegistry.Provider(
            client: client, roots: roots,
            unavailable: unavailableReason.map {
                ProviderRegistry.Unavailability(reason: $0, sinceUsec: since ?? WallClock.nowUsec())
            }, starting: unavailableReason != nil)
        hasClaims = true
        refreshProviderAvailability()
        client.connection.reply(["provider": .int(Int64(client.connection.id)), "requests": []], continues: true)
        if unavailableReason == nil {
            restoreEphemeral(of: client.connection.id)
            resumeWaiting()
        }
        logger.info(
            "provider registered",
            metadata: ["subtrees": "\(roots.map { $0 + ".**" })", "pid": "\(client.origin.pid)"])
    }

    /// The provider that `parameters` names, when it belongs to `client`'s user.
    private func namedProvider(
        _ parameters: CallParameters, client: BusClient
    ) throws(VarlinkError) -> (id: Int, provider: ProviderRegistry.Provider) {
        guard let number = try parameters.optionalInt("provider") else { throw .invalidParameter("provider") }
        guard let provider = byConnection[Int(truncatingIfNeeded: number)],
            provider.client.origin.uid == client.origin.uid
        else { throw BusError.notProvider(number, reason: "no such provider of this user") }
        return (Int(truncatingIfNeeded: number), provider)
    }

    func answer(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let (id, provider) = try namedProvider(parameters, client: client)
        guard let number = try parameters.optionalInt("id") else { throw .invalidParameter("id") }
        guard let pending = requests[number], pending.provider == id else {
            throw BusError.notProvider(Int64(id), reason: "request \(number) is not pending")
        }
        let request = pending.request
        if let error = try parameters.optionalString("error") {
            guard VarlinkNames.isValidQualifiedMemberName(error) else { throw .invalidParameter("error") }
            var errorParameters: [String: JSONValue] = [:]
            if case .object(let members)? = parameters.optionalValue("errorParameters") { errorParameters = members }
            if error == IOBeaconProperties.VersionMismatch.name, let expected = request.ifVersion {
                // The provider compared its own versions; the caller knows this daemon's.
                errorParameters = [
                    "key": .string(request.key), "expected": .int(expected),
                    "actual": .int(try host?.version(of: request.key) ?? 0),
                ]
            }
            let reply = VarlinkError(name: error, parameters: errorParameters)
            requests.removeValue(forKey: number)
            if request.ephemeral, let caller = request.caller, error != IOBeaconProviders.OutcomeUnknown.name {
                ephemeral.forget(request.key, of: caller.connection.id)
            }
            request.caller?.connection.answerDeferred { $0.reply(error: reply) }
        } else {
            guard let change = parameters.optionalValue("change") else { throw .invalidParameter("change") }
            let published = try parsePublished(change, provider: provider)
            guard published.key.rawValue == request.key else {
                throw BusError.notProvider(Int64(id), reason: "the change is of another key than request \(number)")
            }
            requests.removeValue(forKey: number)
            let version = try applyPublished(published, floor: provider.resyncVersion)
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
            byConnection[id]?.unavailable = nil
            if provider.starting { restoreEphemeral(of: id) }
            byConnection[id]?.starting = false
            resumeWaiting()
        } else {
            let reason = try parameters.optionalString("reason") ?? "the provider is unavailable"
            if provider.unavailable?.reason != reason {
                logger.notice(
                    "a provider is unavailable; writes of its subtrees fail",
                    metadata: ["subtrees": "\(provider.roots.map { $0 + ".**" })", "reason": "\(reason)"])
            }
            let since = provider.unavailable?.sinceUsec ?? WallClock.nowUsec()
            byConnection[id]?.unavailable = ProviderRegistry.Unavailability(reason: reason, sinceUsec: since)
        }
        refreshProviderAvailability()
        client.connection.reply([:])
    }

    /// Claims the configured subtrees (`fleet.prefixes`), at start-up, for a provider that has not registered yet,
    /// so that their writes fail instead of being stored locally.
    func expectProviders(of roots: [String]) {
        let since = WallClock.nowUsec()
        for root in roots {
            orphans[root] = ProviderRegistry.Unavailability(
                reason: "no provider has registered yet (the configuration names \(root).** in fleet.prefixes)",
                sinceUsec: since)
        }
        hasClaims = true
        refreshProviderAvailability()
    }

    func refreshProviderAvailability() {
        hasUnavailable = anyUnavailable
    }

    /// The provided subtrees, for Status: who provides each, and whether its writes work.
    func providerStatus() -> [JSONValue] {
        var states: [JSONValue] = []
        for (id, provider) in byConnection.sorted(by: { $0.key < $1.key }) {
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
        for (root, orphan) in orphans.sorted(by: { $0.key < $1.key }) {
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
        let resyncVersion = try parameters.optionalInt("providerVersion")
        guard resyncVersion == nil || resync else { throw .invalidParameter("providerVersion") }
        for change in changes { _ = try applyPublished(change, floor: provider.resyncVersion) }
        if resync {
            // A resync too large for one message comes in parts; the keys it did not name go after the last.
            var published = provider.resyncing ?? []
            published.formUnion(changes.map(\.key.rawValue))
            byConnection[id]?.resyncing = more ? published : nil
            guard !more else {
                client.connection.reply("version", integer: host?.currentVersion ?? 0)
                return
            }
            for root in provider.roots {
                guard let host, let prefix = try? PropertyKey(root, limits: host.limits.keyLimits) else { continue }
                for key in try host.keys(below: prefix)
                where key.rawValue != root && !published.contains(key.rawValue) {
                    _ = try host.delete(key.rawValue, origin: provider.client.origin)
                    providerVersions.removeValue(forKey: key.rawValue)
                }
            }
            if let resyncVersion { byConnection[id]?.resyncVersion = resyncVersion }
        }
        client.connection.reply("version", integer: host?.currentVersion ?? 0)
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
        guard let host else { throw .invalidParameter("changes") }
        let key = try host.limits.parseKey(name)
        guard provider.roots.contains(where: { ProviderRegistry.contains($0, key.rawValue) }) else {
            throw BusError.notProvider(Int64(provider.client.connection.id), reason: "\(name) is outside its subtrees")
        }
        var value: [UInt8]?
        if let given = members["value"], given != .null {
            var bytes: [UInt8] = []
            given.encode(into: &bytes)
            guard bytes.count <= host.limits.maxValueSize else {
                throw BusError.valueTooLarge(name, size: bytes.count, limit: host.limits.maxValueSize)
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

    /// Applies a published change unless it is older than the key's last one, or, for a key the provider's last
    /// resync did not name, no newer than that resync (`floor`); returns the key's version after it.
    private func applyPublished(_ change: PublishedChange, floor: Int64) throws(VarlinkError) -> Int64 {
        guard let host else { return 0 }
        let name = change.key.rawValue
        let current = try host.version(of: name) ?? 0
        if let known = providerVersions[name] ?? (floor > 0 ? floor : nil), change.providerVersion <= known {
            return current
        }
        providerVersions[name] = change.providerVersion
        guard let value = change.value else {
            return try host.delete(name, origin: change.origin) ?? current
        }
        return try host.storeProvided(change.key, value: value, origin: change.origin) ?? current
    }
}

extension ProviderRegistry: IOBeaconProviders.Handlers {}
