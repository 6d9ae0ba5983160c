import BeaconProtocol
import BeaconSystemd
import Logging
import NIOCore

/// What the lifecycle service needs of the bus: to set and delete the daemon's own properties, post its
/// notifications, tell the fan-out whether the session is active, keep a stream, and the loop it runs on.
protocol LifecycleHost: AnyObject {
    var eventLoop: (any EventLoop)? { get }
    func setSystemProperty(_ name: String, _ value: JSONValue?)
    func postSystemNotification(_ name: String, userInfo: JSONValue?)
    func sessionActivityChanged(_ active: Bool)
    func streamBegan(_ client: BusClient)
    func requestEndOfTick()
}

/// The session's lifecycle as logind's bridge reports it, the sleep participants (`io.beacon.Lifecycle`), and the
/// declarative D-Bus bridge's properties and notifications: its own state and methods, reaching the bus only through
/// ``LifecycleHost``.
final class LifecycleService {
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

    /// The bus; set once it is made.
    weak var bus: (any LifecycleHost)?
    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Connects the bus to the lifecycle bridge (`nil`: the bridge is turned off), before any event arrives.
    ///
    /// The lifecycle properties stored by an earlier run describe a session and a boot that are over: they are
    /// deleted (with a deletion for `since` replays), and set again once the bridge has read logind.
    func attach(_ bridge: LogindBridge?, sleepTimeout: Duration) {
        sleep.bridge = bridge
        sleep.configuredTimeout = sleepTimeout
        for property in LifecycleProperty.allCases {
            bus?.setSystemProperty(property.rawValue, nil)
        }
    }

    /// Publishes one event of the logind bridge: properties are set, notifications posted, and sleep
    /// participants told of sleep and wake-up.
    func apply(_ event: LogindEvent) {
        switch event {
        case .bridgeState(let state):
            bridgeState = state
            if case .connected = state {
                logger.info("lifecycle bridge connected", metadata: ["state": "\(summary)"])
            } else {
                logger.notice("lifecycle bridge unavailable", metadata: ["state": "\(summary)"])
                // A sleep in preparation cannot be answered to a logind that is gone.
                sleep.abandonRound()
            }
        case .property(let property, let value):
            updateSnapshot(property, value)
            switch value {
            case .bool(let flag): bus?.setSystemProperty(property.rawValue, .bool(flag))
            case .string(let text): bus?.setSystemProperty(property.rawValue, .string(text))
            }
            if property == .lifecycleState, case .string(let state) = value {
                bus?.sessionActivityChanged(state == "active")
            }
        case .notification(let notification):
            let userInfo = notification.userInfo
            bus?.postSystemNotification(
                notification.name,
                userInfo: userInfo.isEmpty ? nil : .object(userInfo.mapValues { .string($0) })
            )
            switch notification {
            case .willSleep: sleep.beginRound(logger: logger)
            case .didWake: sleep.endRound()
            default: break
            }
        }
    }

    /// Publishes one event of the declarative D-Bus bridge.
    func apply(_ event: DBusBridgeEvent) {
        switch event {
        case .busState(let bus, let state):
            dbusBuses[bus.description] = state.description
            logger.info("D-Bus bridge", metadata: ["bus": "\(bus)", "state": "\(state)"])
        case .property(let key, let value):
            let transform = bridgeTransforms[.property(key)]
            let shown = value.map { transform?.apply(Self.json($0)) ?? Self.json($0) }
            bus?.setSystemProperty(key, shown)
            if let transform, let quietMs = transform.quietMs { armQuietTimer(key, after: quietMs, transform, shown) }
        case .notification(let name, let arguments):
            let transform = bridgeTransforms[.notification(name)]
            let values = arguments.map { transform?.apply(Self.json($0)) ?? Self.json($0) }
            var userInfo: [String: JSONValue]
            if let names = transform?.names, !names.isEmpty {
                userInfo = [:]
                for (name, value) in zip(names, values) { userInfo[name] = value }
            } else {
                userInfo = ["arguments": .array(values)]
                if values.count == 1 { userInfo["value"] = values[0] }
            }
            bus?.postSystemNotification(name, userInfo: .object(userInfo))
        }
    }

    /// A property fed by a signal returns to its `quietValue` once no signal came for `milliseconds`: the timer runs
    /// only while the property shows another value (an idle daemon has none).
    private func armQuietTimer(
        _ key: String, after milliseconds: Int, _ transform: BridgeTransform, _ shown: JSONValue?
    ) {
        bridgeQuietTimers.removeValue(forKey: key)?.cancel()
        guard let shown, shown != transform.quietValue, let loop = bus?.eventLoop else { return }
        bridgeQuietTimers[key] = loop.assumeIsolated().scheduleTask(
            in: .milliseconds(Int64(milliseconds))
        ) {
            [self] in
            bridgeQuietTimers[key] = nil
            bus?.setSystemProperty(key, transform.quietValue)
            bus?.requestEndOfTick()
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
        var updated = snapshot ?? LifecycleSnapshot()
        switch property {
        case .sessionActive: updated.sessionActive = flag
        case .sessionLocked: updated.sessionLocked = flag
        case .sessionIdle: updated.sessionIdle = flag
        case .systemSleeping: updated.systemSleeping = flag
        case .systemShuttingDown: updated.systemShuttingDown = flag
        case .lifecycleState: break
        }
        snapshot = updated
    }

    // MARK: io.beacon.Lifecycle

    func state(_ parameters: CallParameters, client: BusClient) {
        client.connection.reply(stateReply)
    }

    func holdSleep(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        guard enabled else { throw BusError.lifecycleUnavailable("the lifecycle bridge is disabled") }
        _ = try parameters.optionalString("description")
        sleep.register(client)
        bus?.streamBegan(client)
        client.connection.reply(
            ["event": .string("registered"), "participant": .int(Int64(client.connection.id))],
            continues: true
        )
    }

    /// The stream of `client` ended (its HoldSleep among them): it no longer takes part in sleeps.
    func streamEnded(of client: BusClient) {
        sleep.left(client.connection.id, logger: logger)
    }

    func release(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        guard let participant = try parameters.optionalInt("participant") else {
            throw .invalidParameter("participant")
        }
        let round = try parameters.optionalInt("sleep")
        guard let id = Int(exactly: participant) else { throw BusError.noSuchParticipant(participant) }
        try sleep.release(id, round: round, logger: logger)
        client.connection.reply([:])
    }

    /// The reply of `io.beacon.Lifecycle.State`.
    var stateReply: [String: JSONValue] {
        var reply: [String: JSONValue] = [
            "bridge": .string(summary),
            "participants": .int(Int64(sleep.participants.count)),
            "sleepInhibitor": .bool(sleep.bridge?.status.sleepInhibitorHeld ?? false),
        ]
        if let snapshot {
            reply["state"] = .string(snapshot.state)
            reply["sessionActive"] = .bool(snapshot.sessionActive)
            reply["sessionLocked"] = .bool(snapshot.sessionLocked)
            reply["sessionIdle"] = .bool(snapshot.sessionIdle)
            reply["systemSleeping"] = .bool(snapshot.systemSleeping)
            reply["systemShuttingDown"] = .bool(snapshot.systemShuttingDown)
        }
        if let pending = sleep.pending {
            reply["sleep"] = .int(sleep.round)
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

extension LifecycleService: IOBeaconLifecycle.Handlers {}
