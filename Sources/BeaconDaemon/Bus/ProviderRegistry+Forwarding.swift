import BeaconProtocol
import NIOCore
import VarlinkServer

extension ProviderRegistry {
    // MARK: Forwarding

    /// Forwards a Set or Unset of a provided key to its provider, and answers the call when the provider does;
    /// returns false when no provider claims the key. `ifVersion` is checked against the key's version here. While
    /// the subtree has no provider, or its provider is still reading its source, the call waits for it, up to
    /// ``ProviderRegistry/waitLimit``.
    func forwardToProvider(
        method: RequestMethod, key: String, value: [UInt8]?, ifVersion: Int64?, ephemeral: Bool, client: BusClient
    ) throws(VarlinkError) -> Bool {
        guard claim(of: key) != nil else { return false }
        if waits(key) || queue.waiting.contains(where: { $0.key == key }) {
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
        method: RequestMethod, key: String, value: [UInt8]?, ifVersion: Int64?, ephemeral: Bool, owner: BusClient,
        caller: BusClient?
    ) throws(VarlinkError) {
        let id: Int
        switch claim(of: key) {
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
            let actual = try host?.version(of: key) ?? 0
            guard actual == ifVersion else { throw BusError.versionMismatch(key, expected: ifVersion, actual: actual) }
            if actual == 0 {
                ifProviderVersion = 0
            } else if let known = providerVersions[key] {
                ifProviderVersion = known
            } else {
                throw BusError.providerUnavailable(key, reason: "the provider has not published this key yet")
            }
        }
        let (number, write) = newRequest()
        let request = ProviderRegistry.Request(
            caller: caller, method: method, key: key, value: value, ifVersion: ifVersion,
            ifProviderVersion: ifProviderVersion, ephemeral: ephemeral, origin: owner.origin, write: write)
        send(request, number: number, to: id)
        if ephemeral, method == .set {
            self.ephemeral.record(key, owner: owner.connection.id, value: value)
        }
    }

    /// Hands a request that a provider was sent before, unchanged, to provider `id`, under a new number.
    private func sendAgain(_ request: ProviderRegistry.Request, to id: Int) {
        send(request, number: newRequest().number, to: id)
    }

    /// Hands `request` to provider `id`'s connection, as request `number`.
    private func send(_ request: ProviderRegistry.Request, number: Int64, to id: Int) {
        guard let provider = byConnection[id] else { return }
        requests[number] = ProviderRegistry.Pending(provider: id, request: request)
        provider.client.connection.sendEncoded { buffer in
            JSONWriter.appendASCII("{\"parameters\":{\"requests\":[{\"id\":", to: &buffer)
            JSONWriter.appendInt(number, to: &buffer)
            JSONWriter.appendASCII(",\"method\":", to: &buffer)
            JSONWriter.appendString(request.method.rawValue, to: &buffer)
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
    func restoreEphemeral(of id: Int) {
        guard !ephemeral.values.isEmpty, let provider = byConnection[id] else { return }
        for (key, entry) in ephemeral.values.sorted(by: { $0.key < $1.key }) {
            guard (try? host?.version(of: key)) == nil,
                provider.roots.contains(where: { ProviderRegistry.contains($0, key) }),
                let owner = host?.client(entry.owner)
            else { continue }
            let (number, write) = newRequest()
            var request = ProviderRegistry.Request(
                caller: nil, method: .set, key: key, value: entry.value, ifVersion: nil, ifProviderVersion: 0,
                ephemeral: true, origin: owner.origin, write: write)
            request.restore = true
            send(request, number: number, to: id)
        }
    }

    // MARK: Waiting for a provider

    /// Keeps a write until its subtree's provider can take it, or its time is up.
    private func wait(_ kind: ProviderRegistry.Waiting.Kind, caller: BusClient?) {
        queue.waiting.append(
            ProviderRegistry.Waiting(kind: kind, caller: caller, deadline: .now() + queue.limit))
        scheduleWaitTimer()
    }

    /// Arms the timer for the first waiting write's deadline, unless it is armed.
    private func scheduleWaitTimer() {
        guard queue.timer == nil, let first = queue.waiting.first, let loop = host?.eventLoop else { return }
        queue.timer = loop.assumeIsolated().scheduleTask(deadline: first.deadline) { [self] in
            queue.timer = nil
            expireWaiting()
        }
    }

    /// Answers the waiting writes whose time is up: a write no provider got is refused; one that a provider got and
    /// did not answer may have been carried out, and its outcome is unknown.
    private func expireWaiting() {
        let now = NIODeadline.now()
        var kept: [ProviderRegistry.Waiting] = []
        for waiting in queue.waiting {
            guard waiting.deadline <= now else {
                kept.append(waiting)
                continue
            }
            let limit = "\(queue.limit.nanoseconds / 1_000_000) ms"
            let error: VarlinkError
            switch waiting.kind {
            case .call(_, let key, _, _, _, _):
                let reason = unavailability(of: key)?.reason ?? "no provider"
                error = BusError.providerUnavailable(key, reason: "\(reason) (waited \(limit); not applied)")
            case .sent(let request):
                error = BusError.outcomeUnknown(
                    request.key,
                    reason: "the provider disconnected after it was sent the write, and none answered it within "
                        + limit)
            }
            waiting.caller?.connection.answerDeferred { $0.reply(error: error) }
        }
        queue.waiting = kept
        scheduleWaitTimer()
    }

    /// Hands the waiting writes whose subtree's provider can take them now to it, in their order.
    func resumeWaiting() {
        if !queue.unanswered.isEmpty {
            var kept: [ProviderRegistry.Request] = []
            for request in queue.unanswered {
                guard let id = readyProvider(of: request.key) else {
                    kept.append(request)
                    continue
                }
                sendAgain(request, to: id)
            }
            queue.unanswered = kept
        }
        guard !queue.waiting.isEmpty else { return }
        var kept: [ProviderRegistry.Waiting] = []
        for waiting in queue.waiting {
            // A later write of a key stays behind an earlier one that still waits.
            guard !waits(waiting.key), !kept.contains(where: { $0.key == waiting.key }) else {
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
                guard let id = readyProvider(of: request.key) else {
                    // The subtree's new provider does not claim this key: nobody can tell what became of it.
                    let error = BusError.outcomeUnknown(request.key, reason: "no provider claims the key any more")
                    waiting.caller?.connection.answerDeferred { $0.reply(error: error) }
                    continue
                }
                sendAgain(request, to: id)
            }
        }
        queue.waiting = kept
        if kept.isEmpty {
            queue.timer?.cancel()
            queue.timer = nil
        }
    }

    /// A connection closed: a provider's subtrees become orphans, and the writes it had not answered wait for the
    /// next provider, which is sent them unchanged (it applies each at most once, and answers what became of
    /// it); a caller's ephemeral provided keys are unset through their provider; its writes still waiting for a
    /// provider are dropped.
    func providerConnectionClosed(_ client: BusClient) {
        let id = client.connection.id
        if !queue.waiting.isEmpty {
            queue.waiting.removeAll {
                if case .call(_, _, _, _, _, let owner) = $0.kind { owner === client } else { false }
            }
        }
        let keys = ephemeral.removeAll(of: id)
        if !keys.isEmpty {
            for key in keys.sorted() {
                let (number, write) = newRequest()
                let request = ProviderRegistry.Request(
                    caller: nil, method: .unset, key: key, value: nil, ifVersion: nil, ifProviderVersion: nil,
                    ephemeral: false, origin: client.origin, write: write)
                if let owner = readyProvider(of: key) {
                    send(request, number: number, to: owner)
                } else if claim(of: key) != nil {
                    queue.unanswered.append(request)
                }
            }
        }
        guard let provider = byConnection.removeValue(forKey: id) else { return }
        let reason = "the provider (pid \(client.origin.pid)) disconnected"
        let orphaned = ProviderRegistry.Unavailability(reason: reason, sinceUsec: WallClock.nowUsec())
        for root in provider.roots { orphans[root] = orphaned }
        refreshProviderAvailability()
        for (number, pending) in requests.sorted(by: { $0.key < $1.key }) where pending.provider == id {
            requests.removeValue(forKey: number)
            let request = pending.request
            if request.caller == nil {
                queue.unanswered.append(request)
            } else {
                wait(.sent(request), caller: request.caller)
            }
        }
        for root in provider.roots {
            for key in providerVersions.keys where ProviderRegistry.contains(root, key) {
                providerVersions.removeValue(forKey: key)
            }
        }
        logger.notice(
            "a provider disconnected; writes of its subtrees wait until one registers them again",
            metadata: ["subtrees": "\(provider.roots.map { $0 + ".**" })", "pid": "\(client.origin.pid)"])
    }
}
