import BeaconEventLoop
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Settings of a ``LogindBridge``.
public struct LogindBridgeConfiguration: Sendable {
    /// Where logind lives; `.system` honours `DBUS_SYSTEM_BUS_ADDRESS`.
    public var bus: DBusBusAddress
    /// The logind session id to follow first (default `$XDG_SESSION_ID`). When it is unset or unknown to logind,
    /// the user's display session (`GetUser(uid)` → `Display`) is used, then `GetSessionByPID(pid)`.
    public var sessionID: String?
    public var userID: UInt32
    public var processID: Int32
    /// Hold a logind `delay` inhibitor for sleep, so that participants get time before the machine suspends.
    public var takesSleepInhibitor: Bool
    /// `who` and `why` of the inhibitor, as `systemd-inhibit --list` shows them.
    public var inhibitorWho: String
    public var inhibitorWhy: String
    /// How long the inhibitor is held after `PrepareForSleep(true)` when nobody calls
    /// ``LogindBridge/beginSleep(participants:timeout:)``. Always capped by logind's `InhibitDelayMaxUSec`.
    public var sleepDelay: Duration
    /// Backoff for reconnecting to the bus and for looking for a session again.
    public var reconnect: DBusReconnectPolicy
    /// Time limit of each call to logind.
    public var callTimeout: Duration

    public init(
        bus: DBusBusAddress = .system,
        sessionID: String? = LogindBridgeConfiguration.environment("XDG_SESSION_ID"),
        userID: UInt32 = getuid(),
        processID: Int32 = getpid(),
        takesSleepInhibitor: Bool = true,
        inhibitorWho: String = "beacond",
        inhibitorWhy: String = "Beacon clients prepare for sleep",
        sleepDelay: Duration = .seconds(3),
        reconnect: DBusReconnectPolicy = DBusReconnectPolicy(),
        callTimeout: Duration = .seconds(10)
    ) {
        self.bus = bus
        self.sessionID = sessionID.flatMap { $0.isEmpty ? nil : $0 }
        self.userID = userID
        self.processID = processID
        self.takesSleepInhibitor = takesSleepInhibitor
        self.inhibitorWho = inhibitorWho
        self.inhibitorWhy = inhibitorWhy
        self.sleepDelay = sleepDelay
        self.reconnect = reconnect
        self.callTimeout = callTimeout
    }

    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

/// What the bridge knows right now, for `Daemon.Status`.
public struct LogindBridgeStatus: Sendable, Hashable {
    /// `nil` until the first connection attempt has an outcome.
    public var state: LogindBridgeState?
    /// The lifecycle flags last published (`nil` before the first successful read).
    public var snapshot: LifecycleSnapshot?
    /// Whether the sleep `delay` inhibitor's file descriptor is open.
    public var sleepInhibitorHeld: Bool
    /// logind's `InhibitDelayMaxUSec`, once read.
    public var inhibitDelayMax: Duration?
    /// A sleep is being prepared: participants that still have to answer (`nil`: no count given yet).
    public var sleepInProgress: Bool
    public var sleepParticipantsPending: Int?

    public init() {
        self.state = nil
        self.snapshot = nil
        self.sleepInhibitorHeld = false
        self.inhibitDelayMax = nil
        self.sleepInProgress = false
        self.sleepParticipantsPending = nil
    }
}

/// Follows the user's logind session and the system's sleep and shutdown over the system bus, and reports them
/// as Beacon lifecycle properties and notifications.
///
/// ```swift
/// let bridge = try LogindBridge(configuration: LogindBridgeConfiguration(), logger: logger)
/// try bridge.start()
/// for await event in bridge.events {
///     switch event {
///     case .property(let property, let value): store.set(property.rawValue, value)
///     case .notification(let note): post(note.name, note.userInfo)
///     case .bridgeState(let state): status.lifecycle = state
///     }
/// }
/// ```
///
/// Events arrive in the order they happened; the first ones are the bridge state and the value of every
/// ``LifecycleProperty`` read at start-up (no notification for the initial state). See
/// ``LifecycleSnapshot/events(from:)`` for the order within one transition.
///
/// Sleep: while ``LogindBridgeConfiguration/takesSleepInhibitor`` is set, the bridge holds a `delay` inhibitor.
/// On `PrepareForSleep(true)` it posts `willSleep` and keeps the inhibitor until ``releaseSleepInhibitor()``, until
/// as many ``sleepParticipantDidAnswer()`` as announced with ``beginSleep(participants:timeout:)`` arrived, or
/// until the sleep delay runs out (never longer than logind's `InhibitDelayMaxUSec`). After wake-up it takes
/// a new inhibitor.
///
/// The bridge runs on the event loop it is given (the daemon's own, so that it costs no thread), else on a loop
/// of its own; every method here is safe from any thread.
public final class LogindBridge: Sendable {
    /// The bridge's events. Meant for one consumer; finishes after ``shutdown()``.
    public let events: AsyncStream<LogindEvent>
    private let continuation: AsyncStream<LogindEvent>.Continuation
    private let loop: SDBusLoop
    private let core: LogindBridgeCore
    private let started = Mutex(false)

    /// `eventLoop`: the loop to run on; without one, the bridge starts a loop (a thread) of its own.
    public init(
        configuration: LogindBridgeConfiguration = LogindBridgeConfiguration(), eventLoop: EpollEventLoop? = nil,
        logger: Logger
    ) throws(DBusError) {
        (events, continuation) = AsyncStream.makeStream(of: LogindEvent.self, bufferingPolicy: .unbounded)
        loop = try SDBusLoop(
            address: configuration.bus, reconnectPolicy: configuration.reconnect, eventLoop: eventLoop,
            logger: logger)
        core = LogindBridgeCore(configuration: configuration, loop: loop, logger: logger) { [continuation] event in
            continuation.yield(event)
        }
    }

    deinit {
        shutdown()
    }

    /// Connects, finds the session and reports, on the bridge's loop. Calling it twice does nothing.
    public func start() throws(DBusError) {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        loop.start(delegate: core)
    }

    /// Releases the inhibitor, closes the connection, stops a loop of the bridge's own and finishes ``events``.
    public func shutdown() {
        loop.stop { [core] in core.shutdown() }
        continuation.finish()
    }

    /// The current state, for status reports.
    public var status: LogindBridgeStatus { core.status }

    /// Announces how many participants were asked to prepare for the sleep that ``LifecycleNotification/willSleep``
    /// announced, and how long they may take (capped by logind's `InhibitDelayMaxUSec`). With zero
    /// participants the inhibitor is released at once. Ignored when no sleep is being prepared.
    public func beginSleep(participants: Int, timeout: Duration) {
        loop.execute { [core] in core.beginSleep(participants: participants, timeout: timeout) }
    }

    /// One participant is ready for sleep; the inhibitor is released when the last announced one is.
    public func sleepParticipantDidAnswer() {
        loop.execute { [core] in core.participantDidAnswer() }
    }

    /// Lets the machine sleep now: closes the inhibitor of the sleep being prepared.
    public func releaseSleepInhibitor() {
        loop.execute { [core] in core.releaseSleepInhibitor(reason: "released") }
    }
}
