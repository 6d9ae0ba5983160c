import BeaconProtocol
import BeaconSystemd
import NIOCore

/// The bus's side of the lifecycle bridge: the state last reported, and the sleep participants.
struct LifecycleBusState {
    var sleep = SleepParticipants()
    /// `false` when the configuration turned the bridge off.
    var enabled: Bool { sleep.bridge != nil }
    /// `nil` until the bridge reports its first state.
    var bridgeState: LogindBridgeState?
    /// The flags as last published; `nil` until the bridge has read logind once.
    var snapshot: LifecycleSnapshot?
    /// State of the declarative D-Bus bridge's buses, by bus.
    var dbusBuses: [String: String] = [:]
    /// What the daemon makes of the declarative bridge's values, by target (``BridgeTransform``).
    var bridgeTransforms: [DBusMapping.Target: BridgeTransform] = [:]
    /// The timers that return a quiet bridged property to its `quietValue`, by key; armed only after a signal.
    var bridgeQuietTimers: [String: Scheduled<Void>] = [:]

    /// One line for `Status` and the log.
    var summary: String {
        guard enabled else { return "disabled" }
        guard let bridgeState else { return "starting" }
        switch bridgeState {
        case .connected(let path): return "connected: \(path)"
        case .disconnected(let reason): return "disconnected: \(reason)"
        case .noSession(let reason): return "no session: \(reason)"
        }
    }
}

extension BeaconBus {
    /// Connects the bus to the lifecycle bridge (`nil`: the bridge is turned off), before any event arrives.
    ///
    /// The lifecycle properties stored by an earlier run describe a session and a boot that are over: they are
    /// deleted (with a deletion for `since` replays), and set again once the bridge has read logind.
    package func attachLifecycle(_ bridge: LogindBridge?, sleepTimeout: Duration) {
        lifecycle.sleep.bridge = bridge
        lifecycle.sleep.configuredTimeout = sleepTimeout
        for property in LifecycleProperty.allCases {
            setSystemProperty(property.rawValue, nil)
        }
    }

    /// Publishes one event of the logind bridge: properties are set, notifications posted, and sleep
    /// participants told of sleep and wake-up.
    package func apply(_ event: LogindEvent) {
        switch event {
        case .bridgeState(let state):
            lifecycle.bridgeState = state
            if case .connected = state {
                logger.info("lifecycle bridge connected", metadata: ["state": "\(lifecycle.summary)"])
            } else {
                logger.notice("lifecycle bridge unavailable", metadata: ["state": "\(lifecycle.summary)"])
                // A sleep in preparation cannot be answered to a logind that is gone.
                lifecycle.sleep.abandonRound()
            }
        case .property(let property, let value):
            updateSnapshot(property, value)
            switch value {
            case .bool(let flag): setSystemProperty(property.rawValue, .bool(flag))
            case .string(let text): setSystemProperty(property.rawValue, .string(text))
            }
            if property == .lifecycleState, case .string(let state) = value {
                fanOut.sessionActivityChanged(state == "active")
            }
        case .notification(let notification):
            let userInfo = notification.userInfo
            postSystemNotification(
                notification.name,
                userInfo: userInfo.isEmpty ? nil : .object(userInfo.mapValues { .string($0) })
            )
            switch notification {
            case .willSleep: lifecycle.sleep.beginRound(logger: logger)
            case .didWake: lifecycle.sleep.endRound()
            default: break
            }
        }
    }

    /// Publishes one event of the declarative D-Bus bridge.
    package func apply(_ event: DBusBridgeEvent) {
        switch event {
        case .busState(let bus, let state):
            lifecycle.dbusBuses[bus.description] = state.description
            logger.info("D-Bus bridge", metadata: ["bus": "\(bus)", "state": "\(state)"])
        case .property(let key, let value):
            let transform = lifecycle.bridgeTransforms[.property(key)]
            let shown = value.map { transform?.apply(Self.json($0)) ?? Self.json($0) }
            setSystemProperty(key, shown)
            if let transform, let quietMs = transform.quietMs { armQuietTimer(key, after: quietMs, transform, shown) }
        case .notification(let name, let arguments):
            let transform = lifecycle.bridgeTransforms[.notification(name)]
            let values = arguments.map { transform?.apply(Self.json($0)) ?? Self.json($0) }
            var userInfo: [String: JSONValue]
            if let names = transform?.names, !names.isEmpty {
                userInfo = [:]
                for (name, value) in zip(names, values) { userInfo[name] = value }
            } else {
                userInfo = ["arguments": .array(values)]
                if values.count == 1 { userInfo["value"] = values[0] }
            }
            postSystemNotification(name, userInfo: .object(userInfo))
        }
    }

    /// A property fed by a signal returns to its `quietValue` once no signal came for `milliseconds`: the timer runs
    /// only while the property shows another value (an idle daemon has none).
    private func armQuietTimer(
        _ key: String, after milliseconds: Int, _ transform: BridgeTransform, _ shown: JSONValue?
    ) {
        lifecycle.bridgeQuietTimers.removeValue(forKey: key)?.cancel()
        guard let shown, shown != transform.quietValue, let server else { return }
        lifecycle.bridgeQuietTimers[key] = server.eventLoop.assumeIsolated().scheduleTask(
            in: .milliseconds(Int64(milliseconds))
        ) {
            [self] in
            lifecycle.bridgeQuietTimers[key] = nil
            setSystemProperty(key, transform.quietValue)
            requestEndOfTick()
        }
    }

    static func json(_ value: DBusValue) -> JSONValue {
        switch value {
        case .bool(let flag): return .bool(flag)
        case .int64(let number): return .int(number)
        case .uint64(let number): return Int64(exactly: number).map(JSONValue.int) ?? .double(Double(number))
        case .double(let number): return number.isFinite ? .double(number) : .null
        case .string(let text), .objectPath(let text), .signature(let text): return .string(text)
        case .unixFD(let descriptor): return .int(Int64(descriptor))
        case .array(let elements): return .array(elements.map(json))
        case .dict(let entries): return .object(entries.mapValues(json))
        }
    }

    private func updateSnapshot(_ property: LifecycleProperty, _ value: LifecycleValue) {
        guard case .bool(let flag) = value else { return }
        var snapshot = lifecycle.snapshot ?? LifecycleSnapshot()
        switch property {
        case .sessionActive: snapshot.sessionActive = flag
        case .sessionLocked: snapshot.sessionLocked = flag
        case .sessionIdle: snapshot.sessionIdle = flag
        case .systemSleeping: snapshot.systemSleeping = flag
        case .systemShuttingDown: snapshot.systemShuttingDown = flag
        case .lifecycleState: break
        }
        lifecycle.snapshot = snapshot
    }

    // MARK: io.beacon.Lifecycle

    func holdSleep(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        guard lifecycle.enabled else { throw BusError.lifecycleUnavailable("the lifecycle bridge is disabled") }
        _ = try parameters.optionalString("description")
        lifecycle.sleep.register(client)
        streamBegan(client)
        client.connection.reply(
            ["event": .string("registered"), "participant": .int(Int64(client.connection.id))],
            continues: true
        )
    }

    func release(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        guard let participant = try parameters.optionalInt("participant") else {
            throw .invalidParameter("participant")
        }
        let round = try parameters.optionalInt("sleep")
        guard let id = Int(exactly: participant) else { throw BusError.noSuchParticipant(participant) }
        try lifecycle.sleep.release(id, round: round, logger: logger)
        client.connection.reply([:])
    }

    func replyLifecycleState(to client: BusClient) {
        client.connection.reply(lifecycleState())
    }

    private func lifecycleState() -> [String: JSONValue] {
        var reply: [String: JSONValue] = [
            "bridge": .string(lifecycle.summary),
            "participants": .int(Int64(lifecycle.sleep.participants.count)),
            "sleepInhibitor": .bool(lifecycle.sleep.bridge?.status.sleepInhibitorHeld ?? false),
        ]
        if let snapshot = lifecycle.snapshot {
            reply["state"] = .string(snapshot.state)
            reply["sessionActive"] = .bool(snapshot.sessionActive)
            reply["sessionLocked"] = .bool(snapshot.sessionLocked)
            reply["sessionIdle"] = .bool(snapshot.sessionIdle)
            reply["systemSleeping"] = .bool(snapshot.systemSleeping)
            reply["systemShuttingDown"] = .bool(snapshot.systemShuttingDown)
        }
        if let pending = lifecycle.sleep.pending {
            reply["sleep"] = .int(lifecycle.sleep.round)
            reply["pending"] = .int(Int64(pending.count))
        }
        return reply
    }
}

extension BusError {
    static func lifecycleUnavailable(_ reason: String) -> VarlinkError {
        VarlinkError(name: IOBeaconLifecycle.Unavailable.name, parameters: ["reason": .string(reason)])
    }

    static func noSuchParticipant(_ participant: Int64) -> VarlinkError {
        VarlinkError(name: IOBeaconLifecycle.NoSuchParticipant.name, parameters: ["participant": .int(participant)])
    }
}
