import BeaconProtocol
import BeaconSystemd

/// The bus's side of the lifecycle bridge: the state last reported, and the sleep participants.
struct LifecycleBusState {
    /// The bridge that holds the sleep inhibitor; `nil` when the daemon runs without one.
    var bridge: LogindBridge?
    /// `false` when the configuration turned the bridge off.
    var enabled: Bool { bridge != nil }
    /// `nil` until the bridge reports its first state.
    var bridgeState: LogindBridgeState?
    /// The flags as last published; `nil` until the bridge has read logind once.
    var snapshot: LifecycleSnapshot?
    var sleepTimeout: Duration = .seconds(3)
    /// Clients running `HoldSleep`, by connection id.
    var participants: [Int: BusClient] = [:]
    /// Number of the last sleep announced to participants.
    var sleepRound: Int64 = 0
    /// Participants that have not answered the sleep being prepared; `nil` when none is.
    var pending: Set<Int>?
    /// State of the declarative D-Bus bridge's buses, by bus.
    var dbusBuses: [String: String] = [:]

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
    public func attachLifecycle(_ bridge: LogindBridge?, sleepTimeout: Duration) {
        lifecycle.bridge = bridge
        lifecycle.sleepTimeout = sleepTimeout
        for property in LifecycleProperty.allCases {
            guard let entry = properties[property.rawValue] else { continue }
            delete(key: property.rawValue, entry: entry, origin: .daemon)
        }
    }

    /// Publishes one event of the logind bridge: properties are set, notifications posted, and sleep
    /// participants told of sleep and wake-up.
    public func apply(_ event: LogindEvent) {
        switch event {
        case .bridgeState(let state):
            lifecycle.bridgeState = state
            if case .connected = state {
                logger.info("lifecycle bridge connected", metadata: ["state": "\(lifecycle.summary)"])
            } else {
                logger.notice("lifecycle bridge unavailable", metadata: ["state": "\(lifecycle.summary)"])
                // A sleep in preparation cannot be answered to a logind that is gone.
                lifecycle.pending = nil
            }
        case .property(let property, let value):
            updateSnapshot(property, value)
            switch value {
            case .bool(let flag): setSystemProperty(property.rawValue, .bool(flag))
            case .string(let text): setSystemProperty(property.rawValue, .string(text))
            }
        case .notification(let notification):
            let userInfo = notification.userInfo
            postSystemNotification(
                notification.name,
                userInfo: userInfo.isEmpty ? nil : .object(userInfo.mapValues { .string($0) })
            )
            switch notification {
            case .willSleep: beginSleepRound()
            case .didWake: endSleepRound()
            default: break
            }
        }
    }

    /// Publishes one event of the declarative D-Bus bridge.
    public func apply(_ event: DBusBridgeEvent) {
        switch event {
        case .busState(let bus, let state):
            lifecycle.dbusBuses[bus.description] = state.description
            logger.info("D-Bus bridge", metadata: ["bus": "\(bus)", "state": "\(state)"])
        case .property(let key, let value):
            setSystemProperty(key, value.map(Self.json))
        case .notification(let name, let arguments):
            var userInfo: [String: JSONValue] = ["arguments": .array(arguments.map(Self.json))]
            if arguments.count == 1 { userInfo["value"] = Self.json(arguments[0]) }
            postSystemNotification(name, userInfo: .object(userInfo))
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

    func handleLifecycle(_ call: VarlinkCall, client: BusClient) throws(VarlinkError) {
        let parameters = CallParameters(call)
        switch call.member {
        case "State":
            client.connection.reply(lifecycleState())
        case "HoldSleep":
            guard call.more else { throw .expectedMore() }
            guard lifecycle.enabled else { throw BusError.lifecycleUnavailable("the lifecycle bridge is disabled") }
            _ = try parameters.optionalString("description")
            lifecycle.participants[client.connection.id] = client
            client.connection.reply(
                ["event": .string("registered"), "participant": .int(Int64(client.connection.id))],
                continues: true
            )
            client.connection.beginStream()
        case "Release":
            guard let participant = try parameters.optionalInt("participant") else {
                throw .invalidParameter("participant")
            }
            let round = try parameters.optionalInt("sleep")
            guard let id = Int(exactly: participant), lifecycle.participants[id] != nil else {
                throw BusError.noSuchParticipant(participant)
            }
            if round == nil || round == lifecycle.sleepRound {
                participantAnswered(id)
            }
            client.connection.reply([:])
        default:
            throw .methodNotImplemented(call.method)
        }
    }

    private func lifecycleState() -> [String: JSONValue] {
        var reply: [String: JSONValue] = [
            "bridge": .string(lifecycle.summary),
            "participants": .int(Int64(lifecycle.participants.count)),
            "sleepInhibitor": .bool(lifecycle.bridge?.status.sleepInhibitorHeld ?? false),
        ]
        if let snapshot = lifecycle.snapshot {
            reply["state"] = .string(snapshot.state)
            reply["sessionActive"] = .bool(snapshot.sessionActive)
            reply["sessionLocked"] = .bool(snapshot.sessionLocked)
            reply["sessionIdle"] = .bool(snapshot.sessionIdle)
            reply["systemSleeping"] = .bool(snapshot.systemSleeping)
            reply["systemShuttingDown"] = .bool(snapshot.systemShuttingDown)
        }
        if let pending = lifecycle.pending {
            reply["sleep"] = .int(lifecycle.sleepRound)
            reply["pending"] = .int(Int64(pending.count))
        }
        return reply
    }

    /// The effective time participants get: the configured timeout, capped by logind's `InhibitDelayMaxUSec`.
    private var sleepTimeout: Duration {
        guard let maximum = lifecycle.bridge?.status.inhibitDelayMax else { return lifecycle.sleepTimeout }
        return min(lifecycle.sleepTimeout, maximum)
    }

    private func beginSleepRound() {
        lifecycle.sleepRound += 1
        let round = lifecycle.sleepRound
        let participants = lifecycle.participants
        lifecycle.pending = Set(participants.keys)
        let timeout = sleepTimeout
        let timeoutUsec = timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000
        for (id, client) in participants.sorted(by: { $0.key < $1.key }) {
            client.connection.reply(
                [
                    "event": .string("willSleep"), "participant": .int(Int64(id)), "sleep": .int(round),
                    "timeoutUsec": .int(timeoutUsec),
                ],
                continues: true
            )
        }
        logger.info("preparing for sleep", metadata: ["participants": "\(participants.count)", "sleep": "\(round)"])
        if participants.isEmpty {
            lifecycle.pending = nil
            lifecycle.bridge?.releaseSleepInhibitor()
        } else {
            lifecycle.bridge?.beginSleep(participants: participants.count, timeout: timeout)
        }
    }

    private func endSleepRound() {
        lifecycle.pending = nil
        let round = lifecycle.sleepRound
        for (id, client) in lifecycle.participants.sorted(by: { $0.key < $1.key }) {
            client.connection.reply(
                ["event": .string("didWake"), "participant": .int(Int64(id)), "sleep": .int(round)],
                continues: true
            )
        }
    }

    private func participantAnswered(_ id: Int) {
        guard lifecycle.pending?.remove(id) != nil else { return }
        guard lifecycle.pending?.isEmpty == true else { return }
        lifecycle.pending = nil
        logger.info("sleep participants are ready", metadata: ["sleep": "\(lifecycle.sleepRound)"])
        lifecycle.bridge?.releaseSleepInhibitor()
    }

    /// A client's connection closed: if it was a participant, it no longer holds sleep back.
    func sleepParticipantLeft(_ client: BusClient) {
        let id = client.connection.id
        guard lifecycle.participants.removeValue(forKey: id) != nil else { return }
        participantAnswered(id)
    }
}

extension BusError {
    static func lifecycleUnavailable(_ reason: String) -> VarlinkError {
        VarlinkError(name: "io.beacon.Lifecycle.Unavailable", parameters: ["reason": .string(reason)])
    }

    static func noSuchParticipant(_ participant: Int64) -> VarlinkError {
        VarlinkError(name: "io.beacon.Lifecycle.NoSuchParticipant", parameters: ["participant": .int(participant)])
    }
}
