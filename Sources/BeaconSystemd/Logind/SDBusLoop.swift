import CSystemd
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Receives the connection's ups and downs, on the loop thread.
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

/// One sd-bus connection served by a thread of its own.
///
/// sd-bus objects are not thread-safe, so everything that touches the `sd_bus` runs on this thread: the thread
/// loops over `sd_bus_process` and `poll(2)` on the bus fd plus a wake-up pipe. Other threads hand work over with
/// ``execute(_:)``; the work then runs on the thread, as do timers, match handlers and reply handlers.
/// When the connection drops (or cannot be opened) the loop tells its delegate and opens a new one after a backoff;
/// while the bus's socket does not exist at all, it waits for the socket to appear (inotify on the nearest existing
/// directory on its way) instead, so a daemon without that bus has no timer and does not wake.
final class SDBusLoop: @unchecked Sendable {
    // Safe from any thread: the inbox is behind a mutex and the pipe is written with write(2).
    private struct Inbox {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        var thread: pthread_t?
    }
    private let inbox = Mutex(Inbox())
    private let wakeRead: Int32
    private let wakeWrite: Int32

    let address: DBusBusAddress
    let logger: Logger
    private let reconnectPolicy: DBusReconnectPolicy

    // Everything below belongs to the loop thread.
    private var bus: OpaquePointer?
    private var delegate: (any SDBusLoopDelegate)?
    private var timers: [(id: UInt64, deadline: UInt64, body: () -> Void)] = []
    private var nextTimerID: UInt64 = 1
    private var reconnectDelay: Duration
    /// The reason of the last failed attempt; the same failure again is logged at debug level only.
    private var lastFailure: String?
    private var reconnectTimer: UInt64?
    private var connectedAt: UInt64 = 0
    private var matches: [ObjectIdentifier: SDBusMatch] = [:]
    private var loopThread: pthread_t?
    /// An inotify descriptor watching for the missing bus socket (``waitForSocket(_:)``), else -1.
    private var socketWatch: Int32 = -1

    init(address: DBusBusAddress, reconnectPolicy: DBusReconnectPolicy, logger: Logger) throws(DBusError) {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 {
            throw DBusError(errno: errno, "creating the wake-up pipe")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        self.wakeRead = fds[0]
        self.wakeWrite = fds[1]
        self.address = address
        self.reconnectPolicy = reconnectPolicy
        self.reconnectDelay = reconnectPolicy.initialDelay
        self.logger = logger
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts the thread; the delegate is called on it from now on.
    func start(delegate: any SDBusLoopDelegate & Sendable) throws(DBusError) {
        let body = Unmanaged.passRetained(SDBusThreadBody { [self] in self.run(delegate: delegate) })
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<SDBusThreadBody>.fromOpaque(argument).takeRetainedValue().body()
                return nil
            }, body.toOpaque())
        if result != 0 {
            body.release()
            throw DBusError(errno: result, "starting the D-Bus thread")
        }
        inbox.withLock { $0.thread = thread }
    }

    /// Stops the thread and closes the connection. Waits for the thread unless called on it.
    func stop() {
        let thread = inbox.withLock { inbox -> pthread_t? in
            inbox.stopping = true
            let thread = inbox.thread
            inbox.thread = nil
            return thread
        }
        wake()
        guard let thread else { return }
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    /// Runs `job` on the loop thread.
    func execute(_ job: @escaping @Sendable () -> Void) {
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.stopping else { return false }
            inbox.jobs.append(job)
            return true
        }
        if accepted { wake() }
    }

    /// Runs `job` as the last work on the loop thread, then stops the thread and closes the connection.
    func stop(after job: @escaping @Sendable () -> Void) {
        inbox.withLock { inbox in
            if !inbox.stopping { inbox.jobs.append(job) }
        }
        stop()
    }

    var isOnLoopThread: Bool {
        guard let loopThread else { return false }
        return pthread_equal(loopThread, pthread_self()) != 0
    }

    func assertOnLoop() {
        precondition(isOnLoopThread, "sd-bus state touched outside its thread")
    }

    /// Whether a connection is open right now (loop thread only).
    var isConnected: Bool { bus != nil }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: - Timers (loop thread)

    @discardableResult
    func schedule(after delay: Duration, _ body: @escaping () -> Void) -> UInt64 {
        assertOnLoop()
        let id = nextTimerID
        nextTimerID += 1
        let deadline = Self.monotonicMicroseconds() + Self.microseconds(delay)
        timers.append((id, deadline, body))
        return id
    }

    func cancelTimer(_ id: UInt64?) {
        guard let id else { return }
        timers.removeAll { $0.id == id }
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

    // MARK: - The thread

    private func run(delegate: any SDBusLoopDelegate) {
        loopThread = pthread_self()
        self.delegate = delegate
        connect()
        while true {
            let (jobs, stopping) = inbox.withLock { inbox -> ([@Sendable () -> Void], Bool) in
                let jobs = inbox.jobs
                inbox.jobs.removeAll()
                return (jobs, inbox.stopping)
            }
            for job in jobs { job() }
            if stopping { break }
            fireDueTimers()
            processBus()
            waitForWork()
        }
        timers.removeAll()
        stopWaitingForSocket()
        dropConnection()
        self.delegate = nil
    }

    private func fireDueTimers() {
        let now = Self.monotonicMicroseconds()
        let due = timers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
        guard !due.isEmpty else { return }
        timers.removeAll { $0.deadline <= now }
        for timer in due { timer.body() }
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

    private func waitForWork() {
        var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        if socketWatch >= 0 { fds.append(pollfd(fd: socketWatch, events: Int16(POLLIN), revents: 0)) }
        var deadline = timers.map(\.deadline).min() ?? UInt64.max
        if let bus {
            let events = sd_bus_get_events(bus)
            if events >= 0 {
                fds.append(pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: events), revents: 0))
            }
            var busDeadline: UInt64 = 0
            if sd_bus_get_timeout(bus, &busDeadline) > 0 {
                deadline = min(deadline, busDeadline)
            }
        }
        var timeout: Int32 = -1
        if deadline != UInt64.max {
            let now = Self.monotonicMicroseconds()
            timeout = deadline <= now ? 0 : Int32(clamping: (deadline - now + 999) / 1000)
        }
        let result = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeout) }
        if result > 0 && fds[0].revents != 0 {
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &buffer, buffer.count) > 0 {}
        }
        if result > 0, socketWatch >= 0, fds[1].fd == socketWatch, fds[1].revents != 0 { socketDirectoryChanged() }
    }

    // MARK: - Waiting for the bus socket (loop thread)

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
            connect()
            return
        }
        if !waitForSocket(path) { scheduleReconnect() }
    }

    private func stopWaitingForSocket() {
        guard socketWatch >= 0 else { return }
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
            scheduleReconnect()
            return
        }
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

    // MARK: - Calls and matches (loop thread)

    /// Sends a method call; `reply` runs on the loop thread with the reply or the error. Without a connection,
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

    /// Installs a match rule; `handler` runs on the loop thread for each matching message until the match is
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

/// A match installed with ``SDBusLoop/addMatch(_:handler:)``. Loop thread only.
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

private final class SDBusThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
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
