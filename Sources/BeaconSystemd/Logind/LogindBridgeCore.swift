import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// logind's names.
enum Logind {
    static let service = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let manager = "org.freedesktop.login1.Manager"
    static let session = "org.freedesktop.login1.Session"
    static let user = "org.freedesktop.login1.User"
    static let properties = "org.freedesktop.DBus.Properties"
    static let busService = "org.freedesktop.DBus"
    static let busPath = "/org/freedesktop/DBus"
    /// logind's default when the property cannot be read.
    static let defaultInhibitDelayMax = Duration.seconds(5)
}

/// The logind bridge's state machine. It lives on the bus's loop: every method runs there (entry points from
/// other threads go through ``SDBusLoop/execute(_:)``), so its state needs no lock; only ``status`` is shared.
final class LogindBridgeCore: SDBusLoopDelegate, @unchecked Sendable {
    private let configuration: LogindBridgeConfiguration
    private let loop: SDBusLoop
    private let logger: Logger
    private let emit: @Sendable (LogindEvent) -> Void
    private let sharedStatus = Mutex(LogindBridgeStatus())

    /// Bumped whenever logind-side state is thrown away; replies for an older generation are ignored.
    private var generation: UInt64 = 0
    /// Bumped whenever the session is looked up again; session replies for an older one are ignored.
    private var sessionGeneration: UInt64 = 0
    private var missingSessionReason = "no logind session for this process"
    private var connectionMatches: [SDBusMatch] = []
    private var sessionMatches: [SDBusMatch] = []
    private var sessionPath: String?
    private var managerLoaded = false
    /// The session is either loaded or known to be missing.
    private var sessionResolved = false
    private var pending = LifecycleSnapshot()
    private var published: LifecycleSnapshot?
    private var bridgeState: LogindBridgeState?
    private var inhibitDelayMax: Duration?
    private var inhibitorFD: Int32 = -1
    private var inhibitorRequested = false
    private var sleepRound: SleepRound?
    private var sessionRetryTimer: UInt64?
    private var sessionRetryDelay: Duration
    private var stopped = false

    private struct SleepRound {
        var remaining: Int?
        var timer: UInt64?
    }

    init(
        configuration: LogindBridgeConfiguration, loop: SDBusLoop, logger: Logger,
        emit: @escaping @Sendable (LogindEvent) -> Void
    ) {
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
        self.emit = emit
        self.sessionRetryDelay = configuration.reconnect.initialDelay
    }

    var status: LogindBridgeStatus { sharedStatus.withLock { $0 } }

    // MARK: - Bus connection

    func busDidConnect(_ loop: SDBusLoop) {
        do {
            try installConnectionMatches()
        } catch {
            logger.info("logind bridge cannot install its matches", metadata: ["error": "\(error)"])
            setState(.disconnected(reason: "cannot subscribe to logind: \(error.message)"))
            return
        }
        let generation = self.generation
        loop.call(
            destination: Logind.busService, path: Logind.busPath, interface: Logind.busService,
            member: "GetNameOwner", arguments: [.string(Logind.service)], timeout: configuration.callTimeout
        ) { [weak self] reply in
            guard let self, generation == self.generation else { return }
            switch reply {
            case .success: self.startLogind()
            case .failure(let error):
                self.setState(.disconnected(reason: "logind is not on the bus (\(error.name))"))
            }
        }
    }

    func busDidDisconnect(_ loop: SDBusLoop, reason: String) {
        connectionMatches.removeAll()
        resetLogind()
        setState(.disconnected(reason: reason))
    }

    private func installConnectionMatches() throws(DBusError) {
        let ownerRule = SDBusMatchRule.signal(
            sender: Logind.busService, path: Logind.busPath, interface: Logind.busService,
            member: "NameOwnerChanged", arg0: Logind.service)
        connectionMatches.append(
            try loop.addMatch(ownerRule) { [weak self] message in
                guard let arguments = try? message.readAll(), arguments.count == 3 else { return }
                self?.logindOwnerChanged(newOwner: arguments[2].stringValue ?? "")
            })
        let managerSignals: [(String, (LogindBridgeCore, [DBusValue]) -> Void)] = [
            ("PrepareForSleep", { core, arguments in core.prepareForSleep(arguments.first?.boolValue) }),
            ("PrepareForShutdown", { core, arguments in core.prepareForShutdown(arguments.first?.boolValue) }),
            ("SessionNew", { core, _ in core.sessionAppeared() }),
            ("SessionRemoved", { core, arguments in core.sessionRemoved(path: arguments.last?.stringValue) }),
        ]
        for (member, handler) in managerSignals {
            let rule = SDBusMatchRule.signal(
                sender: Logind.service, path: Logind.managerPath, interface: Logind.manager, member: member)
            connectionMatches.append(
                try loop.addMatch(rule) { [weak self] message in
                    guard let self, let arguments = try? message.readAll() else { return }
                    handler(self, arguments)
                })
        }
    }

    private func logindOwnerChanged(newOwner: String) {
        resetLogind()
        if newOwner.isEmpty {
            logger.info("logind left the bus")
            setState(.disconnected(reason: "logind left the bus"))
        } else {
            logger.info("logind appeared on the bus", metadata: ["owner": "\(newOwner)"])
            startLogind()
        }
    }

    /// Forgets everything learnt from the current logind instance.
    private func resetLogind() {
        generation += 1
        sessionGeneration += 1
        dropSession()
        managerLoaded = false
        inhibitorRequested = false
        cancelSleepRound()
        closeInhibitor()
        loop.cancelTimer(sessionRetryTimer)
        sessionRetryTimer = nil
        updateStatus()
    }

    private func dropSession() {
        for match in sessionMatches { loop.removeMatch(match) }
        sessionMatches.removeAll()
        sessionPath = nil
        sessionResolved = false
    }

    // MARK: - Loading state

    private func startLogind() {
        guard !stopped else { return }
        let generation = self.generation
        getAll(path: Logind.managerPath, interface: Logind.manager) { [weak self] result in
            guard let self, generation == self.generation else { return }
            switch result {
            case .success(let properties):
                self.managerLoaded = true
                self.pending.systemSleeping = properties["PreparingForSleep"]?.boolValue ?? false
                self.pending.systemShuttingDown = properties["PreparingForShutdown"]?.boolValue ?? false
                if let usec = properties["InhibitDelayMaxUSec"]?.uint64Value {
                    self.inhibitDelayMax = .microseconds(Int64(clamping: usec))
                } else {
                    self.inhibitDelayMax = Logind.defaultInhibitDelayMax
                }
                if !self.pending.systemSleeping { self.takeInhibitor() }
                self.publishIfReady()
            case .failure(let error):
                self.logger.info("reading logind's manager failed", metadata: ["error": "\(error)"])
                self.setState(.disconnected(reason: "cannot read logind's state: \(error.message)"))
                self.retrySession()
            }
        }
        findSession(generation: sessionGeneration)
    }

    private func findSession(generation: UInt64) {
        resolveSessionPath { [weak self] path, failures in
            guard let self, generation == self.sessionGeneration else { return }
            guard let path else {
                let reason = "no logind session for this process (" + failures.joined(separator: "; ") + ")"
                self.sessionMissing(reason: reason)
                return
            }
            self.loadSession(path: path, generation: generation)
        }
    }

    /// `$XDG_SESSION_ID` → `GetSession`; else `GetUser(uid)` → `Display`; else `GetSessionByPID(pid)`.
    private func resolveSessionPath(completion: @escaping (String?, [String]) -> Void) {
        var failures: [String] = []
        let byPID = { [weak self] in
            guard let self else { return }
            self.callManager("GetSessionByPID", [.uint32(UInt32(bitPattern: self.configuration.processID))]) {
                result in
                switch result {
                case .success(let path): completion(path, failures)
                case .failure(let error):
                    failures.append("GetSessionByPID: \(error.name)")
                    completion(nil, failures)
                }
            }
        }
        let byUser = { [weak self] in
            guard let self else { return }
            self.callManager("GetUser", [.uint32(self.configuration.userID)]) { result in
                switch result {
                case .success(let userPath):
                    self.getProperty(path: userPath, interface: Logind.user, name: "Display") { display in
                        if case .success(.array(let fields)) = display, fields.count == 2,
                            let path = fields[1].stringValue, path != "/"
                        {
                            completion(path, failures)
                        } else {
                            failures.append("user has no display session")
                            byPID()
                        }
                    }
                case .failure(let error):
                    failures.append("GetUser: \(error.name)")
                    byPID()
                }
            }
        }
        guard let sessionID = configuration.sessionID else {
            byUser()
            return
        }
        callManager("GetSession", [.string(sessionID)]) { result in
            switch result {
            case .success(let path): completion(path, failures)
            case .failure(let error):
                failures.append("GetSession(\(sessionID)): \(error.name)")
                byUser()
            }
        }
    }

    private func loadSession(path: String, generation: UInt64) {
        let propertiesRule = SDBusMatchRule.signal(
            sender: Logind.service, path: path, interface: Logind.properties, member: "PropertiesChanged",
            arg0: Logind.session)
        let lockRule = SDBusMatchRule.signal(sender: Logind.service, path: path, interface: Logind.session)
        do {
            sessionMatches.append(
                try loop.addMatch(propertiesRule) { [weak self] message in
                    guard let arguments = try? message.readAll(), arguments.count >= 2 else { return }
                    self?.sessionPropertiesChanged(arguments[1], invalidated: arguments.count > 2 ? arguments[2] : nil)
                })
            sessionMatches.append(
                try loop.addMatch(lockRule) { [weak self] message in
                    switch message.member {
                    case "Lock": self?.sessionLockChanged(true)
                    case "Unlock": self?.sessionLockChanged(false)
                    default: break
                    }
                })
        } catch {
            logger.info("cannot subscribe to the session", metadata: ["error": "\(error)"])
            sessionMissing(reason: "cannot subscribe to \(path): \(error.message)")
            return
        }
        sessionPath = path
        refreshSession(generation: generation)
    }

    private func refreshSession(generation: UInt64) {
        guard let path = sessionPath else { return }
        getAll(path: path, interface: Logind.session) { [weak self] result in
            guard let self, generation == self.sessionGeneration, path == self.sessionPath else { return }
            switch result {
            case .success(let properties):
                self.pending.sessionActive = properties["Active"]?.boolValue ?? false
                self.pending.sessionLocked = properties["LockedHint"]?.boolValue ?? false
                self.pending.sessionIdle = properties["IdleHint"]?.boolValue ?? false
                self.sessionResolved = true
                self.sessionRetryDelay = self.configuration.reconnect.initialDelay
                self.publishIfReady()
            case .failure(let error):
                self.sessionMissing(reason: "cannot read session \(path): \(error.name)")
            }
        }
    }

    private func sessionMissing(reason: String) {
        logger.info("logind bridge has no session", metadata: ["reason": "\(reason)"])
        dropSession()
        missingSessionReason = reason
        sessionResolved = true
        pending.sessionActive = false
        publishIfReady()
        retrySession()
    }

    private func retrySession() {
        guard sessionRetryTimer == nil, !stopped else { return }
        let delay = sessionRetryDelay
        sessionRetryDelay = configuration.reconnect.next(after: delay)
        sessionRetryTimer = loop.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.sessionRetryTimer = nil
            self.retryNow()
        }
    }

    private func retryNow() {
        guard loop.isConnected, !stopped else { return }
        if !managerLoaded {
            resetLogind()
            startLogind()
        } else if sessionPath == nil {
            sessionGeneration += 1
            findSession(generation: sessionGeneration)
        }
    }

    // MARK: - Signals

    private func prepareForSleep(_ sleeping: Bool?) {
        guard let sleeping, managerLoaded else { return }
        pending.systemSleeping = sleeping
        publishIfReady()
    }

    private func prepareForShutdown(_ shuttingDown: Bool?) {
        guard let shuttingDown, managerLoaded else { return }
        pending.systemShuttingDown = shuttingDown
        publishIfReady()
    }

    private func sessionAppeared() {
        guard managerLoaded, sessionPath == nil else { return }
        loop.cancelTimer(sessionRetryTimer)
        sessionRetryTimer = nil
        retryNow()
    }

    private func sessionRemoved(path: String?) {
        guard let path, path == sessionPath else { return }
        sessionGeneration += 1
        sessionMissing(reason: "session \(path) was removed")
    }

    private func sessionPropertiesChanged(_ changed: DBusValue, invalidated: DBusValue?) {
        guard sessionResolved, sessionPath != nil, case .dict(let properties) = changed else { return }
        if let active = properties["Active"]?.boolValue { pending.sessionActive = active }
        if let locked = properties["LockedHint"]?.boolValue { pending.sessionLocked = locked }
        if let idle = properties["IdleHint"]?.boolValue { pending.sessionIdle = idle }
        publishIfReady()
        if case .array(let names)? = invalidated,
            names.contains(where: { ["Active", "LockedHint", "IdleHint"].contains($0.stringValue ?? "") })
        {
            refreshSession(generation: sessionGeneration)
        }
    }

    private func sessionLockChanged(_ locked: Bool) {
        guard sessionResolved, sessionPath != nil else { return }
        pending.sessionLocked = locked
        publishIfReady()
    }

    // MARK: - Publishing

    private func publishIfReady() {
        guard managerLoaded, sessionResolved, !stopped else { return }
        if let sessionPath {
            setState(.connected(sessionPath: sessionPath))
        } else {
            setState(.noSession(reason: missingSessionReason))
        }
        let previous = published
        let events = pending.events(from: previous)
        published = pending
        let wasSleeping = previous?.systemSleeping ?? false
        if !wasSleeping && pending.systemSleeping { sleepBegan() }
        if wasSleeping && !pending.systemSleeping { sleepEnded() }
        updateStatus()
        for event in events { emit(event) }
    }

    /// Records the state; an event is emitted only when the kind of state (or the session) changes, so that
    /// retries with a new reason do not repeat it. ``status`` always has the latest reason.
    private func setState(_ state: LogindBridgeState) {
        guard state != bridgeState, !stopped else { return }
        let changesKind = bridgeState.map { !$0.isSameKind(as: state) } ?? true
        bridgeState = state
        updateStatus()
        if changesKind {
            logger.info("logind bridge state", metadata: ["state": "\(state)"])
            emit(.bridgeState(state))
        }
    }

    private func updateStatus() {
        var status = LogindBridgeStatus()
        status.state = bridgeState
        status.snapshot = published
        status.sleepInhibitorHeld = inhibitorFD >= 0
        status.inhibitDelayMax = inhibitDelayMax
        status.sleepInProgress = sleepRound != nil
        status.sleepParticipantsPending = sleepRound?.remaining
        sharedStatus.withLock { $0 = status }
    }

    // MARK: - Sleep inhibitor

    private func takeInhibitor() {
        guard configuration.takesSleepInhibitor, inhibitorFD < 0, !inhibitorRequested, !stopped else { return }
        inhibitorRequested = true
        let generation = self.generation
        loop.call(
            destination: Logind.service, path: Logind.managerPath, interface: Logind.manager, member: "Inhibit",
            arguments: [
                .string("sleep"), .string(configuration.inhibitorWho), .string(configuration.inhibitorWhy),
                .string("delay"),
            ],
            timeout: configuration.callTimeout
        ) { [weak self] reply in
            guard let self else { return }
            let descriptor: Int32
            switch reply {
            case .success(let message):
                guard case .unixFD(let received)? = try? message.readNext() else { return }
                descriptor = fcntl(received, F_DUPFD_CLOEXEC, 3)
            case .failure(let error):
                if generation == self.generation { self.inhibitorRequested = false }
                self.logger.info("logind refused the sleep inhibitor", metadata: ["error": "\(error)"])
                return
            }
            guard generation == self.generation, !self.pending.systemSleeping, !self.stopped, descriptor >= 0
            else {
                if descriptor >= 0 { close(descriptor) }
                if generation == self.generation { self.inhibitorRequested = false }
                return
            }
            self.inhibitorRequested = false
            self.inhibitorFD = descriptor
            self.logger.debug("sleep inhibitor taken")
            self.updateStatus()
        }
    }

    private func closeInhibitor() {
        guard inhibitorFD >= 0 else { return }
        close(inhibitorFD)
        inhibitorFD = -1
    }

    private var sleepDelayCap: Duration { inhibitDelayMax ?? Logind.defaultInhibitDelayMax }

    private func sleepBegan() {
        guard inhibitorFD >= 0 else { return }
        let delay = min(configuration.sleepDelay, sleepDelayCap)
        let timer = loop.schedule(after: delay) { [weak self] in
            self?.releaseSleepInhibitor(reason: "sleep delay ran out")
        }
        sleepRound = SleepRound(remaining: nil, timer: timer)
    }

    private func sleepEnded() {
        cancelSleepRound()
        closeInhibitor()
        takeInhibitor()
    }

    private func cancelSleepRound() {
        loop.cancelTimer(sleepRound?.timer)
        sleepRound = nil
    }

    func beginSleep(participants: Int, timeout: Duration) {
        guard var round = sleepRound else { return }
        if participants <= 0 {
            releaseSleepInhibitor(reason: "no participants")
            return
        }
        loop.cancelTimer(round.timer)
        round.remaining = participants
        round.timer = loop.schedule(after: min(max(timeout, .zero), sleepDelayCap)) { [weak self] in
            self?.releaseSleepInhibitor(reason: "participants did not answer in time")
        }
        sleepRound = round
        updateStatus()
    }

    func participantDidAnswer() {
        guard var round = sleepRound, let remaining = round.remaining else { return }
        if remaining <= 1 {
            releaseSleepInhibitor(reason: "all participants answered")
            return
        }
        round.remaining = remaining - 1
        sleepRound = round
        updateStatus()
    }

    func releaseSleepInhibitor(reason: String) {
        guard sleepRound != nil else { return }
        cancelSleepRound()
        if inhibitorFD >= 0 {
            logger.debug("sleep inhibitor released", metadata: ["reason": "\(reason)"])
        }
        closeInhibitor()
        updateStatus()
    }

    func shutdown() {
        resetLogind()
        stopped = true
    }

    // MARK: - Calls

    private func callManager(
        _ member: String, _ arguments: [SDBusArgument], completion: @escaping (Result<String, DBusError>) -> Void
    ) {
        loop.call(
            destination: Logind.service, path: Logind.managerPath, interface: Logind.manager, member: member,
            arguments: arguments, timeout: configuration.callTimeout
        ) { reply in
            completion(
                reply.flatMap { message in
                    if let path = (try? message.readNext())?.stringValue { return .success(path) }
                    return .failure(DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: member))
                })
        }
    }

    private func getAll(
        path: String, interface: String, completion: @escaping (Result<[String: DBusValue], DBusError>) -> Void
    ) {
        loop.call(
            destination: Logind.service, path: path, interface: Logind.properties, member: "GetAll",
            arguments: [.string(interface)], timeout: configuration.callTimeout
        ) { reply in
            completion(reply.flatMap { message in Result { () throws(DBusError) in try message.readProperties() } })
        }
    }

    private func getProperty(
        path: String, interface: String, name: String, completion: @escaping (Result<DBusValue, DBusError>) -> Void
    ) {
        loop.call(
            destination: Logind.service, path: path, interface: Logind.properties, member: "Get",
            arguments: [.string(interface), .string(name)], timeout: configuration.callTimeout
        ) { reply in
            completion(
                reply.flatMap { message in
                    if let value = try? message.readNext() { return .success(value) }
                    return .failure(DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: name))
                })
        }
    }
}
