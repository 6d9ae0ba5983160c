import BeaconProtocol
import NIOCore
import VarlinkServer

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
        /// Registered unavailable (reading its source), and not available since: writes wait for it.
        var starting: Bool
        /// The providerVersion its last resync reflected (Publish's `providerVersion`): a key it did not name was
        /// absent then, so a change of that key no newer than this is older than what the daemon holds.
        var resyncVersion: Int64 = 0
    }

    /// Why writes of a subtree fail, and since when.
    struct Unavailability {
        var reason: String
        var sinceUsec: Int64
    }

    /// A Set or Unset for a provider, as it is sent (and sent again, unchanged, to the next provider when the one
    /// it went to disconnected before answering).
    struct Request {
        /// The connection that waits for the answer; `nil` when none does.
        let caller: BusClient?
        let method: String
        let key: String
        let value: [UInt8]?
        /// The caller's `ifVersion`, which a VersionMismatch answer reports.
        let ifVersion: Int64?
        let ifProviderVersion: Int64?
        /// The caller asked for an ephemeral Set.
        let ephemeral: Bool
        let origin: Origin
        /// Names the write for as long as it lives, across providers: a provider that gets it again applies it at
        /// most once (beacon-fleet records it in etcd with the write).
        let write: String
        /// An ephemeral Set the daemon makes again for an owner still connected (``ProviderRegistry/ephemeralValues``).
        var restore = false
    }

    /// A request handed to a provider's connection, which the provider has not answered yet.
    struct Pending {
        let provider: Int
        let request: Request
    }

    /// A write that waits for its subtree's provider: one registering, or reading its source after registering.
    struct Waiting {
        enum Kind {
            /// A call not forwarded yet, by `owner`: it is checked (ifVersion) when it is.
            case call(
                method: String, key: String, value: [UInt8]?, ifVersion: Int64?, ephemeral: Bool, owner: BusClient)
            /// A request sent to a provider that disconnected before answering: the provider may have carried it
            /// out, so it goes to the next one unchanged, which tells.
            case sent(Request)
        }

        let kind: Kind
        /// The connection that waits for the answer; `nil` when none does.
        let caller: BusClient?
        /// Uptime nanoseconds after which the caller is answered with an error.
        let deadline: NIODeadline

        var key: String {
            switch kind {
            case .call(_, let key, _, _, _, _): key
            case .sent(let request): request.key
            }
        }
    }

    /// By the connection id of their Provide call.
    var byConnection: [Int: Provider] = [:]
    /// Subtrees with no provider, with why: their provider went away, or the configuration expects one
    /// (`fleet.prefixes`). Their writes fail until a provider registers them.
    var orphans: [String: Unavailability] = [:]
    var requests: [Int64: Pending] = [:]
    var nextRequest: Int64 = 1
    /// Writes waiting for their provider, in the order of their calls.
    var waiting: [Waiting] = []
    /// Requests that no caller waits for (the Unsets of keys whose ephemeral owner went), kept for the next
    /// provider of their subtree however long it takes: a lease kept across a provider's restart would otherwise
    /// keep their keys.
    var unanswered: [Request] = []
    /// The timer that answers the first waiting write whose time is up; set only while some wait.
    var waitTimer: Scheduled<Void>?
    /// How long a write waits for its subtree's provider (`fleet.requestTimeoutMs`).
    var waitLimit: TimeAmount = .milliseconds(5000)
    /// Makes the ids of this daemon's writes unique across its restarts.
    let instance = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    /// The providerVersion of each provided key's current value or deletion.
    var providerVersions: [String: Int64] = [:]
    /// The provided keys each connection set as ephemeral, which go when it closes.
    var ephemeralKeys: [Int: Set<String>] = [:]
    /// The value each provided ephemeral key was last set to, by the connection that owns it: what the daemon sets
    /// again, create-only, when a provider's resync finds the key gone while its owner is still connected.
    var ephemeralValues: [String: (owner: Int, value: [UInt8])] = [:]

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

    /// Whether a write of `key` would wait: its subtree has no provider, or one still reading its source.
    func waits(_ key: String) -> Bool {
        switch claim(of: key) {
        case nil: false
        case .orphaned?: true
        case .provider(_, let provider)?: provider.starting
        }
    }

    /// The provider that takes `key`'s writes now: one claims it, and is not reading its source.
    func readyProvider(of key: String) -> Int? {
        guard case .provider(let id, let provider)? = claim(of: key), !provider.starting else { return nil }
        return id
    }

    /// A number for a new request, and the write name it carries for as long as it lives.
    func newRequest() -> (number: Int64, write: String) {
        defer { nextRequest += 1 }
        return (nextRequest, "\(instance)-\(nextRequest)")
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
            name: IOBeaconProviders.ProviderUnavailable.name,
            parameters: ["key": .string(key), "reason": .string(reason)])
    }

    static func outcomeUnknown(_ key: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProviders.OutcomeUnknown.name, parameters: ["key": .string(key), "reason": .string(reason)])
    }

    static func providerConflict(_ pattern: String) -> VarlinkError {
        VarlinkError(name: IOBeaconProviders.ProviderConflict.name, parameters: ["pattern": .string(pattern)])
    }

    static func notProvider(_ provider: Int64, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProviders.NotProvider.name,
            parameters: ["provider": .int(provider), "reason": .string(reason)])
    }
}

extension BeaconBus {
    // MARK: Forwarding

    /// Forwards a Set or Unset of a provided key to its provider, and answers the call when the provider does;
    /// returns false when no provider claims the key. `ifVersion` is checked against the key's version here. While
    /// the subtree has no provider, or its provider is still reading its source, the call waits for it, up to
    /// ``ProviderRegistry/waitLimit``.
    func forwardToProvider(
        method: String, key: String, value: [UInt8]?, ifVersion: Int64?, ephemeral: Bool, client: BusClient
    ) throws(VarlinkError) -> Bool {
        guard providers.claim(of: key) != nil else { return false }
        if providers.waits(key) || providers.waiting.contains(where: { $0.key == key }) {
            let waits = client.connection.deferReply()
            wait(
                .call(
                    method: method, key: key, value: value, ifVersion: ifVersion, ephemeral: ephemeral, owner: client),
                caller: waits ? client : nil)
            return true
        }
        let waits = client.connection.deferReply()
        do throws(VarlinkError) {
            try forward(
                method: method, key: key, value: value, ifVersion: ifVersion, ephemeral: ephemeral,
                owner: client, caller: waits ? client : nil)
        } catch {
            if waits { client.connection.answerDeferred { $0.reply(error: error) } }
        }
        return true
    }

    /// Checks a call against the key's version and sends it to the provider that claims the key.
    private func forward(
        method: String, key: String, value: [UInt8]?, ifVersion: Int64?, ephemeral: Bool, owner: BusClient,
        caller: BusClient?
    ) throws(VarlinkError) {
        let id: Int
        switch providers.claim(of: key) {
        case nil: throw BusError.providerUnavailable(key, reason: "no provider claims the key")
        case .orphaned(let reason)?: throw BusError.providerUnavailable(key, reason: reason)
        case .provider(let found, let registered)?:
            id = found
            if let unavailable = registered.unavailable {
                throw BusError.providerUnavailable(key, reason: unavailable.reason)
            }
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
        let (number, write) = providers.newRequest()
        let request = ProviderRegistry.Request(
            caller: caller, method: method, key: key, value: value, ifVersion: ifVersion,
            ifProviderVersion: ifProviderVersion, ephemeral: ephemeral, origin: owner.origin, write: write)
        send(request, number: number, to: id)
        if ephemeral, method == "Set" {
            providers.ephemeralKeys[owner.connection.id, default: []].insert(key)
            if let value { providers.ephemeralValues[key] = (owner.connection.id, value) }
        }
    }

    /// Hands a request that a provider was sent before, unchanged, to provider `id`, under a new number.
    private func sendAgain(_ request: ProviderRegistry.Request, to id: Int) {
        send(request, number: providers.newRequest().number, to: id)
    }

    /// Hands `request` to provider `id`'s connection, as request `number`.
    private func send(_ request: ProviderRegistry.Request, number: Int64, to id: Int) {
        guard let provider = providers.byConnection[id] else { return }
        providers.requests[number] = ProviderRegistry.Pending(provider: id, request: request)
        provider.client.connection.sendEncoded { buffer in
            JSONWriter.appendASCII("{\"parameters\":{\"requests\":[{\"id\":", to: &buffer)
            JSONWriter.appendInt(number, to: &buffer)
            JSONWriter.appendASCII(",\"method\":", to: &buffer)
            JSONWriter.appendString(request.method, to: &buffer)
            JSONWriter.appendASCII(",\"key\":", to: &buffer)
            JSONWriter.appendString(request.key, to: &buffer)
            if let value = request.value {
                JSONWriter.appendASCII(",\"value\":", to: &buffer)
                buffer.append(contentsOf: value)
            }
            if let ifProviderVersion = request.ifProviderVersion {
                JSONWriter.appendASCII(",\"ifProviderVersion\":", to: &buffer)
                JSONWriter.appendInt(ifProviderVersion, to: &buffer)
            }
            if request.ephemeral { JSONWriter.appendASCII(",\"ephemeral\":true", to: &buffer) }
            if request.restore { JSONWriter.appendASCII(",\"restore\":true", to: &buffer) }
            JSONWriter.appendASCII(request.caller == nil ? ",\"answered\":false" : ",\"answered\":true", to: &buffer)
            JSONWriter.appendASCII(",\"write\":", to: &buffer)
            JSONWriter.appendString(request.write, to: &buffer)
            JSONWriter.appendASCII(",\"origin\":", to: &buffer)
            request.origin.encode(into: &buffer)
            JSONWriter.appendASCII("}]},\"continues\":true}", to: &buffer)
            buffer.append(0)
        }
    }

    /// Sets again, create-only, the ephemeral keys of provider `id`'s subtrees that its resync found gone while
    /// their owners are still connected (the lease that carried them expired while no provider ran).
    private func restoreEphemeral(of id: Int) {
        guard !providers.ephemeralValues.isEmpty, let provider = providers.byConnection[id] else { return }
        for (key, entry) in providers.ephemeralValues.sorted(by: { $0.key < $1.key }) {
            guard table.entries[key] == nil, provider.roots.contains(where: { ProviderRegistry.contains($0, key) }),
                let owner = clients[entry.owner]
            else { continue }
            let (number, write) = providers.newRequest()
            var request = ProviderRegistry.Request(
                caller: nil, method: "Set", key: key, value: entry.value, ifVersion: nil, ifProviderVersion: 0,
                ephemeral: true, origin: owner.origin, write: write)
            request.restore = true
            send(request, number: number, to: id)
        }
    }

    // MARK: Waiting for a provider

    /// Keeps a write until its subtree's provider can take it, or its time is up.
    private func wait(_ kind: ProviderRegistry.Waiting.Kind, caller: BusClient?) {
        providers.waiting.append(
            ProviderRegistry.Waiting(kind: kind, caller: caller, deadline: .now() + providers.waitLimit))
        scheduleWaitTimer()
    }

    /// Arms the timer for the first waiting write's deadline, unless it is armed.
    private func scheduleWaitTimer() {
        guard providers.waitTimer == nil, let first = providers.waiting.first, let server else { return }
        providers.waitTimer = server.eventLoop.assumeIsolated().scheduleTask(deadline: first.deadline) { [self] in
            providers.waitTimer = nil
            expireWaiting()
        }
    }

    /// Answers the waiting writes whose time is up: a write no provider got is refused; one that a provider got and
    /// did not answer may have been carried out, and its outcome is unknown.
    private func expireWaiting() {
        let now = NIODeadline.now()
        var kept: [ProviderRegistry.Waiting] = []
        for waiting in providers.waiting {
            guard waiting.deadline <= now else {
                kept.append(waiting)
                continue
            }
            let limit = "\(providers.waitLimit.nanoseconds / 1_000_000) ms"
            let error: VarlinkError
            switch waiting.kind {
            case .call(_, let key, _, _, _, _):
                let reason = providers.unavailability(of: key)?.reason ?? "no provider"
                error = BusError.providerUnavailable(key, reason: "\(reason) (waited \(limit); not applied)")
            case .sent(let request):
                error = BusError.outcomeUnknown(
                    request.key,
                    reason: "the provider disconnected after it was sent the write, and none answered it within "
                        + limit)
            }
            waiting.caller?.connection.answerDeferred { $0.reply(error: error) }
        }
        providers.waiting = kept
        scheduleWaitTimer()
    }

    /// Hands the waiting writes whose subtree's provider can take them now to it, in their order.
    func resumeWaiting() {
        if !providers.unanswered.isEmpty {
            var kept: [ProviderRegistry.Request] = []
            for request in providers.unanswered {
                guard let id = providers.readyProvider(of: request.key) else {
                    kept.append(request)
                    continue
                }
                sendAgain(request, to: id)
            }
            providers.unanswered = kept
        }
        guard !providers.waiting.isEmpty else { return }
        var kept: [ProviderRegistry.Waiting] = []
        for waiting in providers.waiting {
            // A later write of a key stays behind an earlier one that still waits.
            guard !providers.waits(waiting.key), !kept.contains(where: { $0.key == waiting.key }) else {
                kept.append(waiting)
                continue
            }
            switch waiting.kind {
            case .call(let method, let key, let value, let ifVersion, let ephemeral, let owner):
                do throws(VarlinkError) {
                    try forward(
                        method: method, key: key, value: value, ifVersion: ifVersion, ephemeral: ephemeral,
                        owner: owner, caller: waiting.caller)
                } catch {
                    waiting.caller?.connection.answerDeferred { $0.reply(error: error) }
                }
            case .sent(let request):
                guard let id = providers.readyProvider(of: request.key) else {
                    // The subtree's new provider does not claim this key: nobody can tell what became of it.
                    let error = BusError.outcomeUnknown(request.key, reason: "no provider claims the key any more")
                    waiting.caller?.connection.answerDeferred { $0.reply(error: error) }
                    continue
                }
                sendAgain(request, to: id)
            }
        }
        providers.waiting = kept
        if kept.isEmpty {
            providers.waitTimer?.cancel()
            providers.waitTimer = nil
        }
    }

    /// A connection closed: a provider's subtrees become orphans, and the writes it had not answered wait for the
    /// next provider, which is sent them unchanged (it applies each at most once, and answers what became of
    /// it); a caller's ephemeral provided keys are unset through their provider; its writes still waiting for a
    /// provider are dropped.
    func providerConnectionClosed(_ client: BusClient) {
        let id = client.connection.id
        if !providers.waiting.isEmpty {
            providers.waiting.removeAll {
                if case .call(_, _, _, _, _, let owner) = $0.kind { owner === client } else { false }
            }
        }
        if let keys = providers.ephemeralKeys.removeValue(forKey: id) {
            for key in keys.sorted() {
                if providers.ephemeralValues[key]?.owner == id { providers.ephemeralValues.removeValue(forKey: key) }
                let (number, write) = providers.newRequest()
                let request = ProviderRegistry.Request(
                    caller: nil, method: "Unset", key: key, value: nil, ifVersion: nil, ifProviderVersion: nil,
                    ephemeral: false, origin: client.origin, write: write)
                if let owner = providers.readyProvider(of: key) {
                    send(request, number: number, to: owner)
                } else if providers.claim(of: key) != nil {
                    providers.unanswered.append(request)
                }
            }
        }
        guard let provider = providers.byConnection.removeValue(forKey: id) else { return }
        let reason = "the provider (pid \(client.origin.pid)) disconnected"
        let orphaned = ProviderRegistry.Unavailability(reason: reason, sinceUsec: WallClock.nowUsec())
        for root in provider.roots { providers.orphans[root] = orphaned }
        refreshProviderAvailability()
        for (number, pending) in providers.requests.sorted(by: { $0.key < $1.key }) where pending.provider == id {
            providers.requests.removeValue(forKey: number)
            let request = pending.request
            if request.caller == nil {
                providers.unanswered.append(request)
            } else {
                wait(.sent(request), caller: request.caller)
            }
        }
        for root in provider.roots {
            for key in providers.providerVersions.keys where ProviderRegistry.contains(root, key) {
                providers.providerVersions.removeValue(forKey: key)
            }
        }
        logger.notice(
            "a provider disconnected; writes of its subtrees wait until one registers them again",
            metadata: ["subtrees": "\(provider.roots.map { $0 + ".**" })", "pid": "\(client.origin.pid)"])
    }

    // MARK: Methods

    func provide(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let patterns = try parsePatterns(try parameters.stringArray("patterns"), interface: IOBeaconProviders.name)
        var roots: [String] = []
        for pattern in patterns {
            let text = pattern.rawValue
            guard text.hasSuffix(".**"), !text.dropLast(3).contains("*") else {
                throw BusError.invalidPattern(
                    IOBeaconProviders.name, text, reason: "a provider's pattern is a key followed by .**")
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
            }, starting: unavailableReason != nil)
        hasProviders = true
        refreshProviderAvailability()
        client.connection.reply(["provider": .int(Int64(client.connection.id)), "requests": []], continues: true)
        client.connection.beginStream()
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
        guard let provider = providers.byConnection[Int(truncatingIfNeeded: number)],
            provider.client.origin.uid == client.origin.uid
        else { throw BusError.notProvider(number, reason: "no such provider of this user") }
        return (Int(truncatingIfNeeded: number), provider)
    }

    func answer(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let (id, provider) = try namedProvider(parameters, client: client)
        guard let number = try parameters.optionalInt("id") else { throw .invalidParameter("id") }
        guard let pending = providers.requests[number], pending.provider == id else {
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
                    "actual": .int(table.entries[request.key]?.version ?? 0),
                ]
            }
            let reply = VarlinkError(name: error, parameters: errorParameters)
            providers.requests.removeValue(forKey: number)
            if request.ephemeral, let caller = request.caller, error != IOBeaconProviders.OutcomeUnknown.name {
                providers.ephemeralKeys[caller.connection.id]?.remove(request.key)
                if providers.ephemeralValues[request.key]?.owner == caller.connection.id {
                    providers.ephemeralValues.removeValue(forKey: request.key)
                }
            }
            request.caller?.connection.answerDeferred { $0.reply(error: reply) }
        } else {
            guard let change = parameters.optionalValue("change") else { throw .invalidParameter("change") }
            let published = try parsePublished(change, provider: provider)
            guard published.key.rawValue == request.key else {
                throw BusError.notProvider(Int64(id), reason: "the change is of another key than request \(number)")
            }
            providers.requests.removeValue(forKey: number)
            let version = applyPublished(published, floor: provider.resyncVersion)
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
            if provider.starting { restoreEphemeral(of: id) }
            providers.byConnection[id]?.starting = false
            resumeWaiting()
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
        let resyncVersion = try parameters.optionalInt("providerVersion")
        guard resyncVersion == nil || resync else { throw .invalidParameter("providerVersion") }
        for change in changes { _ = applyPublished(change, floor: provider.resyncVersion) }
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
            if let resyncVersion { providers.byConnection[id]?.resyncVersion = resyncVersion }
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

    /// Applies a published change unless it is older than the key's last one, or, for a key the provider's last
    /// resync did not name, no newer than that resync (`floor`); returns the key's version after it.
    private func applyPublished(_ change: PublishedChange, floor: Int64) -> Int64 {
        let name = change.key.rawValue
        let current = table.entries[name]?.version ?? 0
        if let known = providers.providerVersions[name] ?? (floor > 0 ? floor : nil), change.providerVersion <= known {
            return current
        }
        providers.providerVersions[name] = change.providerVersion
        guard let value = change.value else {
            return delete(name, origin: change.origin) ?? current
        }
        let index = table.entries.index(forKey: name)
        if let index, table.entries.values[index].holds(value, ownedBy: nil) { return current }
        return store(key: change.key, value: value, at: index, ephemeralOwner: nil, origin: change.origin)
    }
}
