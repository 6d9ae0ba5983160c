import BeaconEventLoop
import CSystemd
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Receives the connection's ups and downs, on the loop.
protocol SDBusLoopDelegate: AnyObject {
    /// A new connection is open; install matches and read state now.
    func busDidConnect(_ loop: SDBusLoop)
    /// The connection is gone (or could not be opened). Every match and pending call of it is gone too.
    func busDidDisconnect(_ loop: SDBusLoop, reason: String)
}

/// How long to wait before the next attempt after a failure: `initial`, doubled per failure up to `maximum`.
public struct DBusReconnectPolicy: Sendable, Hashable {
    public var initialDelay: Duration
    public var maximumDelay: Duration

    public init(initialDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(30)) {
        self.initialDelay = initialDelay
        self.maximumDelay = max(maximumDelay, initialDelay)
    }

    func next(after delay: Duration) -> Duration { min(delay * 2, maximumDelay) }
}

/// One sd-bus connection, driven by an event loop.
///
/// sd-bus objects are not thread-safe, so everything that touches the `sd_bus` runs on the loop: the bus's
/// descriptor is registered with it for the events `sd_bus_get_events` asks for, its time-out
/// (`sd_bus_get_timeout`) is a timer of the loop, and every readiness, timer or job ends by processing the bus
/// until it has nothing left, then arming the descriptor and the timer again, as sd-event does for sd-bus.
/// Other threads hand work over with ``execute(_:)``; timers, match handlers and reply handlers run on the loop.
/// Given the daemon's loop, the connection costs no thread; without one, it starts a loop of its own.
///
/// When the connection drops (or cannot be opened) the loop tells its delegate and opens a new one after a backoff;
/// while the bus's socket does not exist at all, it waits for the socket to appear (inotify on the nearest existing
/// directory on its way) instead, so a daemon without that bus has no timer and does not wake.
final class SDBusLoop: @unchecked Sendable {
    let address: DBusBusAddress
    let logger: Logger
    private let reconnectPolicy: DBusReconnectPolicy
    /// The loop that everything of the connection runs on.
    let eventLoop: EpollEventLoop
    /// The loop started for this connection alone, shut down with it.
    private let ownedLoop: EpollEventLoop?
    /// Set by ``stop()``, from any thread: work handed over later is dropped.
    private let stopping = Atomic<Bool>(false)

    // Everything below belongs to the loop.
    private var bus: OpaquePointer?
    /// The bus's descriptor as registered with the loop, and the events asked for; -1 when none is.
    private var busDescriptor: Int32 = -1
    private var busInterest: EpollInterest = []
    /// The timer of the bus's own time-out (a call's), with the deadline it was set for.
    private var busTimer: (deadline: UInt64, task: Scheduled<Void>)?
    private var delegate: (any SDBusLoopDelegate)?
    private var timers: [UInt64: Scheduled<Void>] = [:]
    private var nextTimerID: UInt64 = 1
    private var reconnectDelay: Duration
    /// The reason of the last failed attempt; the same failure again is logged at debug level only.
    private var lastFailure: String?
    private var reconnectTimer: UInt64?
    private var connectedAt: UInt64 = 0
    private var matches: [ObjectIdentifier: SDBusMatch] = [:]
    /// An inotify descriptor watching for the missing bus socket (``waitForSocket(_:)``), else -1.
    private var socketWatch: Int32 = -1
    /// Quick attempts left at a socket that just appeared: a bus daemon creates its socket when it binds it, a
    /// moment before it listens, so the first attempt may be refused; those are retried after 20 ms, 40 ms, ... (up
    /// to a second) instead of after the reconnect policy's delay.
    private var freshSocketAttempts = 0
    /// ``pump()`` is running: a nested one only asks it to go round again.
    private var pumping = false
    private var pumpAgain = false
    /// A stop asked for while the bus was being processed, done when that ends.
    private var pendingStop: (() -> Void)?
    private var stopped = false

    /// `eventLoop`: the loop to run on; without one, the connection starts a loop (a thread) of its own.
    init(
        address: DBusBusAddress, reconnectPolicy: DBusReconnectPolicy, eventLoop: EpollEventLoop? = nil, logger: Logger
    )
        throws(DBusError)
    {
        if let eventLoop {
            self.eventLoop = eventLoop
            ownedLoop = nil
        } else {
            do {
                let loop = try EpollEventLoop.start(name: "sd-bus")
                self.eventLoop = loop
                ownedLoop = loop
            } catch {
                throw DBusError(errno: error.errno, "starting the D-Bus event loop")
            }
        }
        self.address = address
        self.reconnectPolicy = reconnectPolicy
        self.reconnectDelay = reconnectPolicy.initialDelay
        self.logger = logger
    }

    deinit {
        ownedLoop?.shutdownGracefully { _ in }
    }

    /// Connects on the loop; the delegate is called on it from now on.
    func start(delegate: any SDBusLoopDelegate & Sendable) {
        execute { [self] in
            self.delegate = delegate
            connect()
        }
    }

    /// Closes the connection; a loop of its own is shut down. Waits for that unless called on the loop.
    func stop() {
        stop(after: {})
    }

    /// Runs `job` on the loop, as the last work of the connection, then closes the connection.
    func stop(after job: @escaping @Sendable () -> Void) {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if eventLoop.inEventLoop {
            if pumping {
                pendingStop = job
            } else {
                job()
                tearDown()
            }
            ownedLoop?.shutdownGracefully { _ in }
            return
        }
        try? eventLoop.submit { [self] in
            job()
            tearDown()
        }.wait()
        try? ownedLoop?.syncShutdownGracefully()
    }

    /// Runs `job` on the loop, then processes the bus.
    func execute(_ job: @escaping @Sendable () -> Void) {
        guard !stopping.load(ordering: .acquiring) else { return }
        eventLoop.execute { [self] in
            guard !stopped else { return }
            job()
            pump()
        }
    }

    var isOnLoopThread: Bool { eventLoop.inEventLoop }

    func assertOnLoop() {
        precondition(isOnLoopThread, "sd-bus state touched outside its loop")
    }

    /// Whether a connection is open right now (on the loop only).
    var isConnected: Bool { bus != nil }

    // MARK: - Timers (loop)

    @discardableResult
    func schedule(after delay: Duration, _ body: @escaping () -> Void) -> UInt64 {
        assertOnLoop()
        let id = nextTimerID
        nextTimerID += 1
        timers[id] = eventLoop.assumeIsolated().scheduleTask(in: Self.timeAmount(delay)) { [self] in
            timers[id] = nil
            guard !stopped else { return }
            body()
            pump()
        }
        return id
    }

    func cancelTimer(_ id: UInt64?) {
        guard let id else { return }
        timers.removeValue(forKey: id)?.cancel()
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    static func microseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 { return 0 }
        return UInt64(seconds) * 1_000_000 + UInt64(attoseconds / 1_000_000_000_000)
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        .microseconds(Int64(clamping: microseconds(duration)))
    }

    // MARK: - Driving the bus (loop)

    /// Processes the bus until it has nothing left to do, then arms its descriptor and time-out for what it
    /// waits for next. Called at the end of everything that runs on the loop for the connection.
    private func pump() {
        guard !pumping else {
            pumpAgain = true
            return
        }
        pumping = true
        repeat {
            pumpAgain = false
            processBus()
        } while pumpAgain && !stopped
        pumping = false
        if let job = pendingStop {
            pendingStop = nil
            job()
            tearDown()
            return
        }
        arm()
    }

    private func processBus() {
        while let bus {
            let result = sd_bus_process(bus, nil)
            if result < 0 {
                connectionLost(reason: "connection lost: \(SDBusErrno.text(result))")
                return
            }
            if sd_bus_is_open(bus) <= 0 {
                connectionLost(reason: "the bus closed the connection")
                return
            }
            if result == 0 { return }
        }
    }

    /// Registers the bus's descriptor for the events sd-bus waits for, and sets the timer of its time-out.
    private func arm() {
        guard !stopped, let bus else { return }
        // Poll flags, or a negative errno: then nothing is waited for but the time-out.
        let events = max(0, sd_bus_get_events(bus))
        var interest: EpollInterest = []
        if events & Int32(POLLIN) != 0 { interest.insert(.readable) }
        if events & Int32(POLLOUT) != 0 { interest.insert(.writable) }
        let descriptor = sd_bus_get_fd(bus)
        do {
            if descriptor != busDescriptor {
                unregisterBus()
                try eventLoop.register(descriptor, interest: interest, handler: LoopHandler(self) { $0.pump() })
                busDescriptor = descriptor
                busInterest = interest
            } else if interest != busInterest {
                try eventLoop.reregister(descriptor, interest: interest)
                busInterest = interest
            }
        } catch {
            connectionLost(reason: "cannot wait for the bus: \(error)")
            return
        }
        var deadline: UInt64 = 0
        guard sd_bus_get_timeout(bus, &deadline) >= 0, deadline != UInt64.max else {
            busTimer?.task.cancel()
            busTimer = nil
            return
        }
        guard busTimer?.deadline != deadline else { return }
        busTimer?.task.cancel()
        let now = Self.monotonicMicroseconds()
        let wait = deadline > now ? deadline - now : 0
        let task = eventLoop.assumeIsolated().scheduleTask(in: .microseconds(Int64(clamping: wait))) { [self] in
            busTimer = nil
            pump()
        }
        busTimer = (deadline, task)
    }

    private func unregisterBus() {
        if busDescriptor >= 0 {
            eventLoop.deregister(busDescriptor)
            busDescriptor = -1
            busInterest = []
        }
        busTimer?.task.cancel()
        busTimer = nil
    }

    private func tearDown() {
        stopped = true
        for timer in timers.values { timer.cancel() }
        timers.removeAll()
        stopWaitingForSocket()
        dropConnection()
        delegate = nil
    }

    // MARK: - Waiting for the bus socket (loop)

    /// The path of the bus's Unix socket, when its address names one: `$DBUS_SYSTEM_BUS_ADDRESS` (else
    /// `/run/dbus/system_bus_socket`), `$DBUS_SESSION_BUS_ADDRESS` (else `$XDG_RUNTIME_DIR/bus`), or the explicit
    /// address; `nil` for an abstract socket or another transport.
    static func socketPath(of address: DBusBusAddress) -> String? {
        func variable(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        switch address {
        case .system:
            return variable("DBUS_SYSTEM_BUS_ADDRESS").map(unixPath) ?? "/run/dbus/system_bus_socket"
        case .session:
            if let text = variable("DBUS_SESSION_BUS_ADDRESS") { return unixPath(text) }
            return variable("XDG_RUNTIME_DIR").map { $0 + "/bus" }
        case .address(let text):
            return unixPath(text)
        }
    }

    /// The `path` of the first `unix:` entry of a D-Bus address (`unix:path=/run/bus,guid=...;tcp:...`), with
    /// D-Bus's `%XX` escapes decoded.
    static func unixPath(_ address: String) -> String? {
        for entry in address.split(separator: ";") where entry.hasPrefix("unix:") {
            for pair in entry.dropFirst(5).split(separator: ",") where pair.hasPrefix("path=") {
                var bytes: [UInt8] = []
                var rest = pair.dropFirst(5).utf8[...]
                while let byte = rest.popFirst() {
                    if byte == UInt8(ascii: "%"), rest.count >= 2,
                        let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
                    {
                        bytes.append(value)
                        rest = rest.dropFirst(2)
                    } else {
                        bytes.append(byte)
                    }
                }
                return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
            }
        }
        return nil
    }

    /// Watches for the socket at `path` to appear, from the nearest existing directory on its way; false when the
    /// socket exists (a connection was refused: the timer retries) or nothing can be watched.
    private func waitForSocket(_ path: String) -> Bool {
        guard access(path, F_OK) != 0 else { return false }
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return false }
        var directory = Self.parent(of: path)
        let events = UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        while inotify_add_watch(descriptor, directory, events | UInt32(IN_ONLYDIR)) < 0 {
            guard errno == ENOENT || errno == ENOTDIR, directory != "/" else {
                close(descriptor)
                return false
            }
            directory = Self.parent(of: directory)
        }
        do {
            try eventLoop.register(
                descriptor, interest: .readable,
                handler: LoopHandler(self) {
                    $0.socketDirectoryChanged()
                    $0.pump()
                })
        } catch {
            close(descriptor)
            return false
        }
        socketWatch = descriptor
        logger.debug("waiting for the D-Bus socket", metadata: ["bus": "\(address)", "path": "\(path)"])
        // Created between the first look and the watch: no event will tell of it.
        if access(path, F_OK) == 0 { socketDirectoryChanged() }
        return true
    }

    /// Something appeared on the way to the socket: connect if the socket is there, else watch again from the
    /// (possibly deeper) nearest existing directory.
    private func socketDirectoryChanged() {
        stopWaitingForSocket()
        guard let path = Self.socketPath(of: address), access(path, F_OK) != 0 else {
            freshSocketAttempts = 8
            connect()
            return
        }
        if !waitForSocket(path) { scheduleReconnect() }
    }

    private func stopWaitingForSocket() {
        guard socketWatch >= 0 else { return }
        eventLoop.deregister(socketWatch)
        close(socketWatch)
        socketWatch = -1
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    // MARK: - Connection

    private func connect() {
        reconnectTimer = nil
        var opened: OpaquePointer? = nil
        var result: Int32
        switch address {
        case .system:
            result = sd_bus_open_system(&opened)
        case .session:
            result = sd_bus_open_user(&opened)
        case .address(let text):
            result = sd_bus_new(&opened)
            if result >= 0 { result = text.withCString { sd_bus_set_address(opened, $0) } }
            if result >= 0 { result = sd_bus_set_bus_client(opened, 1) }
            if result >= 0 { result = sd_bus_start(opened) }
            if result < 0, let failed = opened {
                sd_bus_unref(failed)
            }
        }
        guard result >= 0, let opened else {
            let reason = "cannot connect to the \(address): \(SDBusErrno.text(result))"
            logger.log(
                level: reason == lastFailure ? .debug : .info,
                "D-Bus connection failed",
                metadata: ["bus": "\(address)", "reason": "\(reason)"]
            )
            lastFailure = reason
            delegate?.busDidDisconnect(self, reason: reason)
            if freshSocketAttempts > 0 {
                freshSocketAttempts -= 1
                let delay = Duration.milliseconds(min(1000, 20 << (7 - freshSocketAttempts)))
                reconnectTimer = schedule(after: delay) { [weak self] in self?.connect() }
                return
            }
            scheduleReconnect()
            return
        }
        freshSocketAttempts = 0
        bus = opened
        lastFailure = nil
        connectedAt = Self.monotonicMicroseconds()
        logger.debug("D-Bus connection opened", metadata: ["bus": "\(address)"])
        delegate?.busDidConnect(self)
    }

    private func connectionLost(reason: String) {
        logger.info("D-Bus connection lost", metadata: ["bus": "\(address)", "reason": "\(reason)"])
        let livedLong = Self.monotonicMicroseconds() - connectedAt > Self.microseconds(reconnectPolicy.maximumDelay)
        if livedLong { reconnectDelay = reconnectPolicy.initialDelay }
        dropConnection()
        delegate?.busDidDisconnect(self, reason: reason)
        scheduleReconnect()
    }

    private func dropConnection() {
        let live = matches.values
        matches.removeAll()
        for match in live { match.cancel() }
        unregisterBus()
        if let bus {
            self.bus = nil
            sd_bus_flush_close_unref(bus)
        }
    }

    private func scheduleReconnect() {
        guard reconnectTimer == nil, socketWatch < 0 else { return }
        if let path = Self.socketPath(of: address), waitForSocket(path) { return }
        let delay = reconnectDelay
        reconnectDelay = reconnectPolicy.next(after: delay)
        reconnectTimer = schedule(after: delay) { [weak self] in self?.connect() }
    }

    // MARK: - Calls and matches (loop)

    /// Sends a method call; `reply` runs on the loop with the reply or the error. Without a connection,
    /// `reply` runs soon with an error.
    func call(
        destination: String, path: String, interface: String, member: String,
        arguments: [SDBusArgument] = [], timeout: Duration = .seconds(10),
        reply: @escaping (Result<SDBusMessage, DBusError>) -> Void
    ) {
        assertOnLoop()
        do {
            try send(destination, path, interface, member, arguments, timeout, reply)
        } catch {
            schedule(after: .zero) { reply(.failure(error)) }
        }
    }

    private func send(
        _ destination: String, _ path: String, _ interface: String, _ member: String,
        _ arguments: [SDBusArgument], _ timeout: Duration,
        _ reply: @escaping (Result<SDBusMessage, DBusError>) -> Void
    ) throws(DBusError) {
        guard let bus else {
            throw DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "not connected")
        }
        var message: OpaquePointer? = nil
        let created = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard created >= 0, let message else { throw DBusError(errno: created, "creating a call to \(member)") }
        defer { sd_bus_message_unref(message) }
        for argument in arguments {
            try SDBusMessage(pointer: message).append(argument)
        }
        let box = Unmanaged.passRetained(
            SDBusHandlerBox { message in
                if let error = message.error {
                    reply(.failure(error))
                } else {
                    reply(.success(message))
                }
            })
        var slot: OpaquePointer? = nil
        let sent = sd_bus_call_async(
            bus, &slot, message, sdBusHandlerTrampoline, box.toOpaque(), Self.microseconds(timeout))
        guard sent >= 0, let slot else {
            box.release()
            throw DBusError(errno: sent, "calling \(member)")
        }
        sd_bus_slot_set_destroy_callback(slot, sdBusReleaseTrampoline)
        sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }

    /// Installs a match rule; `handler` runs on the loop for each matching message until the match is
    /// cancelled or the connection goes away.
    func addMatch(_ rule: String, handler: @escaping (SDBusMessage) -> Void) throws(DBusError) -> SDBusMatch {
        assertOnLoop()
        guard let bus else {
            throw DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "not connected")
        }
        let box = Unmanaged.passRetained(SDBusHandlerBox(handler))
        var slot: OpaquePointer? = nil
        let added = sd_bus_add_match(bus, &slot, rule, sdBusHandlerTrampoline, box.toOpaque())
        guard added >= 0, let slot else {
            box.release()
            throw DBusError(errno: added, "adding match \(rule)")
        }
        sd_bus_slot_set_destroy_callback(slot, sdBusReleaseTrampoline)
        let match = SDBusMatch(slot: slot)
        matches[ObjectIdentifier(match)] = match
        return match
    }

    func removeMatch(_ match: SDBusMatch?) {
        guard let match else { return }
        matches[ObjectIdentifier(match)] = nil
        match.cancel()
    }
}

/// A match installed with ``SDBusLoop/addMatch(_:handler:)``. On the loop only.
final class SDBusMatch {
    private var slot: OpaquePointer?

    init(slot: OpaquePointer) {
        self.slot = slot
    }

    func cancel() {
        if let slot {
            self.slot = nil
            sd_bus_slot_unref(slot)
        }
    }
}

/// Tells the connection of readiness of one of its descriptors (the bus's, or the watch for its socket).
private final class LoopHandler: EpollHandler {
    private weak var loop: SDBusLoop?
    private let action: (SDBusLoop) -> Void

    init(_ loop: SDBusLoop, _ action: @escaping (SDBusLoop) -> Void) {
        self.loop = loop
        self.action = action
    }

    func ready(_ readiness: EpollReadiness) {
        if let loop { action(loop) }
    }
}

private final class SDBusHandlerBox {
    let handler: (SDBusMessage) -> Void
    init(_ handler: @escaping (SDBusMessage) -> Void) { self.handler = handler }
}

private let sdBusHandlerTrampoline: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    Unmanaged<SDBusHandlerBox>.fromOpaque(userdata).takeUnretainedValue().handler(SDBusMessage(pointer: message))
    return 0
}

private let sdBusReleaseTrampoline: sd_bus_destroy_t = { userdata in
    guard let userdata else { return }
    Unmanaged<SDBusHandlerBox>.fromOpaque(userdata).release()
}

/// Match rule text. Values come from validated names and paths, which cannot contain quotes.
enum SDBusMatchRule {
    static func signal(
        sender: String?, path: String? = nil, interface: String? = nil, member: String? = nil,
        arg0: String? = nil
    ) -> String {
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let path { parts.append("path='\(path)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let arg0 { parts.append("arg0='\(arg0)'") }
        return parts.joined(separator: ",")
    }
}
