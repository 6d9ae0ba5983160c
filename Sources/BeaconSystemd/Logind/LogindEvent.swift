/// What ``LogindBridge`` reports, in order, on its ``LogindBridge/events`` stream.
public enum LogindEvent: Sendable, Hashable, CustomStringConvertible {
    /// The bridge's own state changed (connected to a session, lost the bus, no session found).
    case bridgeState(LogindBridgeState)
    /// A lifecycle property has a new value. The first value of each property comes from the state read at
    /// start-up; later ones only when the value really changed.
    case property(LifecycleProperty, LifecycleValue)
    /// A lifecycle notification: one per real transition, never for the state found at start-up.
    case notification(LifecycleNotification)

    public var description: String {
        switch self {
        case .bridgeState(let state): return "state \(state)"
        case .property(let property, let value): return "\(property.rawValue)=\(value)"
        case .notification(let notification): return notification.description
        }
    }
}

/// The bridge's connection to logind.
public enum LogindBridgeState: Sendable, Hashable, CustomStringConvertible {
    /// Connected to logind and following the session at `sessionPath` (a logind object path).
    case connected(sessionPath: String)
    /// No system bus, or logind is not on it. The bridge retries by itself.
    case disconnected(reason: String)
    /// logind answers but no session was found for this process, or the session went away. The bridge retries
    /// when logind announces a new session and after a backoff.
    case noSession(reason: String)

    /// Same case, ignoring the reason text (but not the session path).
    public func isSameKind(as other: LogindBridgeState) -> Bool {
        switch (self, other) {
        case (.connected(let one), .connected(let two)): return one == two
        case (.disconnected, .disconnected), (.noSession, .noSession): return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .connected(let path): return "connected(\(path))"
        case .disconnected(let reason): return "disconnected(\(reason))"
        case .noSession(let reason): return "noSession(\(reason))"
        }
    }
}

/// The Beacon properties the bridge owns. `rawValue` is the key path.
public enum LifecycleProperty: String, Sendable, Hashable, CaseIterable {
    case sessionActive = "session.active"
    case sessionLocked = "session.locked"
    case sessionIdle = "session.idle"
    case systemSleeping = "system.sleeping"
    case systemShuttingDown = "system.shuttingDown"
    /// `"active"` or `"inactive"`; see ``LifecycleSnapshot/isActive``.
    case lifecycleState = "lifecycle.state"
}

/// A property value: the flags are booleans, `lifecycle.state` is a string.
public enum LifecycleValue: Sendable, Hashable, CustomStringConvertible {
    case bool(Bool)
    case string(String)

    public var description: String {
        switch self {
        case .bool(let flag): return flag ? "true" : "false"
        case .string(let text): return text
        }
    }
}

/// Why the session stops being active.
public enum LifecycleResignReason: String, Sendable, Hashable, CaseIterable {
    case locked
    case sleep
    case sessionInactive
    case shutdown
}

/// The lifecycle notifications. ``name`` is the Beacon notification name, ``userInfo`` its payload.
public enum LifecycleNotification: Sendable, Hashable, CustomStringConvertible {
    case didBecomeActive
    case willResignActive(reason: LifecycleResignReason)
    case willSleep
    case didWake
    case willTerminate

    public var name: String {
        switch self {
        case .didBecomeActive: return "lifecycle.didBecomeActive"
        case .willResignActive: return "lifecycle.willResignActive"
        case .willSleep: return "lifecycle.willSleep"
        case .didWake: return "lifecycle.didWake"
        case .willTerminate: return "lifecycle.willTerminate"
        }
    }

    /// `["reason": ...]` for ``willResignActive(reason:)``, empty otherwise.
    public var userInfo: [String: String] {
        if case .willResignActive(let reason) = self { return ["reason": reason.rawValue] }
        return [:]
    }

    public var description: String {
        if case .willResignActive(let reason) = self { return "\(name)(\(reason.rawValue))" }
        return name
    }
}

/// The lifecycle flags as last read from logind.
public struct LifecycleSnapshot: Sendable, Hashable {
    public var sessionActive: Bool
    public var sessionLocked: Bool
    public var sessionIdle: Bool
    public var systemSleeping: Bool
    public var systemShuttingDown: Bool

    public init(
        sessionActive: Bool = false, sessionLocked: Bool = false, sessionIdle: Bool = false,
        systemSleeping: Bool = false, systemShuttingDown: Bool = false
    ) {
        self.sessionActive = sessionActive
        self.sessionLocked = sessionLocked
        self.sessionIdle = sessionIdle
        self.systemSleeping = systemSleeping
        self.systemShuttingDown = systemShuttingDown
    }

    /// Active when the session is active, unlocked, not sleeping and the system is not shutting down (so that
    /// `willResignActive(shutdown)` is matched by `lifecycle.state` becoming `inactive`).
    public var isActive: Bool { sessionActive && !sessionLocked && !systemSleeping && !systemShuttingDown }

    /// `lifecycle.state`.
    public var state: String { isActive ? "active" : "inactive" }

    public func value(of property: LifecycleProperty) -> LifecycleValue {
        switch property {
        case .sessionActive: return .bool(sessionActive)
        case .sessionLocked: return .bool(sessionLocked)
        case .sessionIdle: return .bool(sessionIdle)
        case .systemSleeping: return .bool(systemSleeping)
        case .systemShuttingDown: return .bool(systemShuttingDown)
        case .lifecycleState: return .string(state)
        }
    }

    /// The events that lead from `old` to `self`. Without an old snapshot (start-up): every property, no
    /// notification. Otherwise, in this order: `willResignActive` (when the session stops being active),
    /// `willTerminate`, `willSleep`; then the properties that changed (in ``LifecycleProperty`` order);
    /// then `didWake` and `didBecomeActive` (when it becomes active again).
    public func events(from old: LifecycleSnapshot?) -> [LogindEvent] {
        guard let old else {
            return LifecycleProperty.allCases.map { .property($0, value(of: $0)) }
        }
        var events: [LogindEvent] = []
        let sleepBegins = !old.systemSleeping && systemSleeping
        let shutdownBegins = !old.systemShuttingDown && systemShuttingDown
        if old.isActive && !isActive {
            let reason: LifecycleResignReason
            if shutdownBegins || systemShuttingDown {
                reason = .shutdown
            } else if sleepBegins || systemSleeping {
                reason = .sleep
            } else if sessionLocked {
                reason = .locked
            } else {
                reason = .sessionInactive
            }
            events.append(.notification(.willResignActive(reason: reason)))
        }
        if shutdownBegins { events.append(.notification(.willTerminate)) }
        if sleepBegins { events.append(.notification(.willSleep)) }
        for property in LifecycleProperty.allCases where old.value(of: property) != value(of: property) {
            events.append(.property(property, value(of: property)))
        }
        if old.systemSleeping && !systemSleeping { events.append(.notification(.didWake)) }
        if !old.isActive && isActive { events.append(.notification(.didBecomeActive)) }
        return events
    }
}
