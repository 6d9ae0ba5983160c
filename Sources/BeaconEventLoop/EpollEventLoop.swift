import CEpoll
import Dispatch
import HeapModule
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A single-threaded event loop on Linux's epoll that tells its owner when a descriptor is ready, and is a
/// SwiftNIO ``EventLoop`` and a Swift concurrency executor besides.
///
/// SwiftNIO's own loops report a descriptor's readiness to SwiftNIO's channels only. This loop reports it to any
/// ``EpollHandler``, so that a server can read and write its sockets itself, with a round of the loop as its only
/// cost beyond the system calls: no channel pipeline, no buffer allocator, no promise per write. Futures, promises,
/// scheduled tasks and Swift tasks run on it as on any SwiftNIO loop.
///
/// With no task queued and no timer armed, the loop sleeps in `epoll_wait` without a timeout: an idle loop never
/// wakes by itself. A cancelled timer leaves the queue of timers before the loop next sleeps, so it does not wake
/// the loop either.
public final class EpollEventLoop: @unchecked Sendable {
    /// What other threads hand the loop: it wakes through `wakeFD` when it may be asleep.
    private struct Inbox: ~Copyable {
        var jobs: [Job] = []
        /// `wakeFD` was written since the loop last emptied the inbox.
        var woken = false
        var stopping = false
        /// The loop takes no more jobs: it is stopping.
        var closed = false
        /// The loop has closed its descriptors and told the callbacks.
        var finished = false
        /// Who waits for the loop to stop.
        var stopCallbacks: [(DispatchQueue, @Sendable ((any Error)?) -> Void)] = []
    }

    /// Work for the loop: a closure or a Swift concurrency job. Only closures that are `Sendable` reach the inbox;
    /// the others are queued on the loop itself.
    private enum Job: @unchecked Sendable {
        case closure(() -> Void)
        case task(UnownedJob)
    }

    /// A scheduled task as the loop keeps it, on the loop only. The job that adds it to the queue and its
    /// cancellation share it: a cancellation that comes first keeps it from being added.
    private final class TimerEntry: @unchecked Sendable {
        /// Runs the task (`true`), or fails its promise when the loop stops first (`false`).
        let body: (Bool) -> Void
        /// It ran, failed or was cancelled: nothing more happens to it.
        var done = false

        init(body: @escaping (Bool) -> Void) {
            self.body = body
        }
    }

    /// A timer in the queue: when it is due, and its number, which orders timers due at once and finds the body.
    private struct Timer: Comparable {
        let deadline: UInt64
        let number: UInt64

        static func < (lhs: Timer, rhs: Timer) -> Bool {
            (lhs.deadline, lhs.number) < (rhs.deadline, rhs.number)
        }
    }

    /// The `epoll_event.data` of the wake-up descriptor; a registered descriptor's is its number.
    private static let wakeToken = UInt64.max

    private let epollFD: Int32
    private let wakeFD: Int32
    private let inbox = Mutex(Inbox())
    /// The thread that runs the loop, once it runs; 0 before.
    private let thread = Atomic<UInt>(0)
    /// Numbers timers, which orders the timers due at the same time.
    private let timerNumbers = Atomic<UInt64>(0)

    // The loop's own: used on its thread only, and no access spans a call that could reach the same one again, so they
    // skip the runtime exclusivity checks. In a release build without `-enforce-exclusivity=unchecked` (a package that
    // depends on this one) they save a Get on beacond 164 instructions (7,366 -> 7,202) and a change bound with `<~` on
    // BeaconClient's loop 176 (12,767 -> 12,591; scripts/callgrind-ops.sh and scripts/client-allocs.sh,
    // Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
    @exclusivity(unchecked) private var jobs: [Job] = []
    @exclusivity(unchecked) private var spareJobs: [Job] = []
    @exclusivity(unchecked) private var timers = Heap<Timer>()
    /// The timers in the queue that have neither run nor been cancelled, by number.
    @exclusivity(unchecked) private var timerBodies: [UInt64: TimerEntry] = [:]
    /// The loop is stopping: a timer scheduled now fails at once.
    @exclusivity(unchecked) private var finishing = false
    /// The handler of each registered descriptor, by descriptor number, with the registration's generation.
    @exclusivity(unchecked) private var handlers: [Registration?] = []
    @exclusivity(unchecked) private var generation: UInt32 = 0

    /// A registered descriptor's handler. The generation tells this registration's events from those a previous
    /// registration of the same descriptor number left in the round (the number is reused once it is closed).
    private struct Registration {
        let generation: UInt32
        let handler: any EpollHandler
    }
    /// Where `epoll_wait` reports.
    private let events: UnsafeMutablePointer<epoll_event>
    private let eventCapacity: Int32 = 64

    /// Creates a loop; it runs once ``run()`` is called on a thread, or on a thread of its own with ``start(name:)``.
    public init() throws(EpollError) {
        let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw EpollError(call: "epoll_create1", errno: errno) }
        let wakeFD = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wakeFD >= 0 else {
            let error = EpollError(call: "eventfd", errno: errno)
            Glibc.close(epollFD)
            throw error
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeToken
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
            let error = EpollError(call: "epoll_ctl", errno: errno)
            Glibc.close(wakeFD)
            Glibc.close(epollFD)
            throw error
        }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        events = .allocate(capacity: Int(eventCapacity))
    }

    deinit {
        events.deallocate()
        // A loop that never ran still has its descriptors.
        if !inbox.withLock({ $0.closed }) {
            Glibc.close(wakeFD)
            Glibc.close(epollFD)
        }
    }

    /// Starts the loop on a new thread named `name` and returns it at once; what is queued on it before the thread
    /// runs waits for it.
    public static func start(name: String = "beacon-loop") throws(EpollError) -> EpollEventLoop {
        let loop = try EpollEventLoop()
        let box = Unmanaged.passRetained(ThreadStart(loop: loop, name: name))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { raw in
                let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
                start.name.withCString { beacon_epoll_name_thread($0) }
                start.loop.run()
                return nil
            }, box.toOpaque())
        guard result == 0 else {
            box.release()
            throw EpollError(call: "pthread_create", errno: result)
        }
        pthread_detach(thread)
        return loop
    }

    private final class ThreadStart {
        let loop: EpollEventLoop
        let name: String
        init(loop: EpollEventLoop, name: String) {
            self.loop = loop
            self.name = name
        }
    }

    // MARK: Descriptors

    /// Starts telling `handler` when `fd` is ready for `interest`. On the loop only. The loop keeps the handler
    /// until ``deregister(_:)``; it does not own the descriptor, which must be deregistered before it is closed.
    public func register(_ fd: Int32, interest: EpollInterest, handler: any EpollHandler) throws(EpollError) {
        assertInEventLoop()
        generation &+= 1
        try control(EPOLL_CTL_ADD, fd, interest, generation)
        let index = Int(fd)
        if index >= handlers.count {
            handlers.append(contentsOf: repeatElement(nil, count: index + 1 - handlers.count))
        }
        handlers[index] = Registration(generation: generation, handler: handler)
    }

    /// Changes what `fd`'s handler is told of. On the loop only.
    public func reregister(_ fd: Int32, interest: EpollInterest) throws(EpollError) {
        assertInEventLoop()
        let index = Int(fd)
        guard index >= 0, index < handlers.count, let registration = handlers[index] else {
            throw EpollError(call: "epoll_ctl", errno: ENOENT)
        }
        try control(EPOLL_CTL_MOD, fd, interest, registration.generation)
    }

    /// Adds `fd` to the epoll set or changes its entry; the event's data is the descriptor's number and, above it,
    /// the registration's generation.
    private func control(
        _ operation: Int32, _ fd: Int32, _ interest: EpollInterest, _ generation: UInt32
    ) throws(EpollError) {
        var event = epoll_event()
        event.events = interest.epollEvents
        event.data.u64 = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
        guard epoll_ctl(epollFD, operation, fd, &event) == 0 else {
            throw EpollError(call: "epoll_ctl", errno: errno)
        }
    }

    /// Stops telling `fd`'s handler anything, also of events already collected in this round. On the loop only.
    public func deregister(_ fd: Int32) {
        assertInEventLoop()
        let index = Int(fd)
        guard index >= 0, index < handlers.count, handlers[index] != nil else { return }
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
        handlers[index] = nil
    }

    // MARK: The loop

    /// Runs the loop on the calling thread until it is shut down.
    public func run() {
        precondition(
            thread.compareExchange(expected: 0, desired: UInt(pthread_self()), ordering: .acquiring).exchanged,
            "an EpollEventLoop runs on one thread, once")
        while true {
            runJobs()
            let timeout = jobs.isEmpty ? waitTimeout() : 0
            let count = beacon_epoll_wait(epollFD, events, eventCapacity, timeout)
            if count < 0 {
                precondition(errno == EINTR, "epoll_wait failed: \(String(cString: strerror(errno)))")
                continue
            }
            var stopping = false
            for index in 0..<Int(count) {
                let event = events[index]
                if event.data.u64 == Self.wakeToken {
                    stopping = takeInbox()
                    continue
                }
                let fd = Int(truncatingIfNeeded: event.data.u64 & 0xffff_ffff)
                guard fd < handlers.count, let registration = handlers[fd],
                    registration.generation == UInt32(truncatingIfNeeded: event.data.u64 >> 32)
                else { continue }
                registration.handler.ready(EpollReadiness(rawValue: event.events))
            }
            if !timers.isEmpty { runDueTimers() }
            if stopping {
                finish()
                return
            }
        }
    }

    /// Runs the jobs queued so far; the ones they queue wait for the next round, after the descriptors.
    private func runJobs() {
        guard !jobs.isEmpty else { return }
        swap(&jobs, &spareJobs)
        for job in spareJobs {
            switch job {
            case .closure(let body): body()
            case .task(let task): task.runSynchronously(on: asUnownedSerialExecutor())
            }
        }
        spareJobs.removeAll(keepingCapacity: true)
    }

    /// Moves what other threads queued to the loop's jobs; returns whether the loop was asked to stop.
    private func takeInbox() -> Bool {
        var count: UInt64 = 0
        _ = read(wakeFD, &count, MemoryLayout<UInt64>.size)
        return inbox.withLock { inbox in
            if jobs.isEmpty {
                swap(&jobs, &inbox.jobs)
            } else {
                jobs.append(contentsOf: inbox.jobs)
                inbox.jobs.removeAll(keepingCapacity: true)
            }
            inbox.woken = false
            return inbox.stopping
        }
    }

    /// Milliseconds until the first live timer, rounded up; -1 without one.
    private func waitTimeout() -> Int32 {
        while let first = timers.min {
            guard timerBodies[first.number] != nil else {
                _ = timers.popMin()
                continue
            }
            let now = NIODeadline.now().uptimeNanoseconds
            guard first.deadline > now else { return 0 }
            let milliseconds = (first.deadline - now + 999_999) / 1_000_000
            return Int32(clamping: milliseconds)
        }
        return -1
    }

    /// Runs the timers that are due, in order.
    private func runDueTimers() {
        let now = NIODeadline.now().uptimeNanoseconds
        while let first = timers.min, first.deadline <= now {
            _ = timers.popMin()
            if let entry = timerBodies.removeValue(forKey: first.number) {
                entry.done = true
                entry.body(true)
            }
        }
        // Cancelled timers wait in the heap until they come first; keep them from outnumbering the live ones.
        if timers.count > 64 && timers.count > 2 * timerBodies.count {
            timers = Heap(timers.unordered.filter { timerBodies[$0.number] != nil })
        }
    }

    private func finish() {
        finishing = true
        // Jobs queued until the loop closes still run, and so do the jobs they queue.
        while true {
            runJobs()
            if !jobs.isEmpty { continue }
            let closed = inbox.withLock { inbox in
                guard inbox.jobs.isEmpty else {
                    swap(&jobs, &inbox.jobs)
                    return false
                }
                inbox.closed = true
                return true
            }
            if closed { break }
        }
        // Then scheduled tasks that did not run fail, as SwiftNIO's loops fail them, and what that queues runs.
        let pending = timers.unordered.sorted().compactMap { timerBodies[$0.number] }
        timerBodies.removeAll()
        timers = Heap()
        for entry in pending {
            entry.done = true
            entry.body(false)
        }
        while !jobs.isEmpty { runJobs() }
        for index in handlers.indices where handlers[index] != nil {
            _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, Int32(index), nil)
            handlers[index] = nil
        }
        Glibc.close(wakeFD)
        Glibc.close(epollFD)
        // The thread may end and its identifier be reused: no thread is the loop's any more.
        thread.store(UInt.max, ordering: .relaxed)
        let callbacks = inbox.withLock { inbox in
            inbox.finished = true
            defer { inbox.stopCallbacks.removeAll() }
            return inbox.stopCallbacks
        }
        for (queue, callback) in callbacks { queue.async { callback(nil) } }
    }

    // MARK: Queuing

    /// Queues `job` from any thread.
    private func queue(_ job: Job) {
        if inEventLoop {
            jobs.append(job)
            return
        }
        inbox.withLock { inbox in
            // A job queued once the loop has closed has nowhere to run: it is dropped.
            guard !inbox.closed else { return }
            inbox.jobs.append(job)
            wake(&inbox)
        }
    }

    /// Wakes the loop unless it was woken since it last emptied the inbox. Under the inbox's lock, so that the
    /// descriptor is still open.
    private func wake(_ inbox: inout Inbox) {
        guard !inbox.woken else { return }
        inbox.woken = true
        var one: UInt64 = 1
        _ = write(wakeFD, &one, MemoryLayout<UInt64>.size)
    }

    /// Schedules `task`; from any thread, though `task` is only sendable when the caller is not on the loop.
    private func schedule<T>(deadline: NIODeadline, _ task: @escaping () throws -> T) -> Scheduled<T> {
        let promise = makePromise(of: T.self)
        let number = timerNumbers.add(1, ordering: .relaxed).newValue
        let body: (Bool) -> Void = { run in
            guard run else {
                promise.fail(EventLoopError.shutdown)
                return
            }
            do {
                promise.assumeIsolatedUnsafeUnchecked().succeed(try task())
            } catch {
                promise.fail(error)
            }
        }
        let entry = TimerEntry(body: body)
        if inEventLoop {
            addTimer(deadline: deadline, number: number, entry: entry)
        } else {
            queue(.closure { self.addTimer(deadline: deadline, number: number, entry: entry) })
        }
        return Scheduled(promise: promise) { [self] in
            let cancel: @Sendable () -> Void = {
                guard !entry.done else { return }
                entry.done = true
                self.timerBodies[number] = nil
                promise.fail(EventLoopError.cancelled)
            }
            if inEventLoop { cancel() } else { execute(cancel) }
        }
    }

    /// Adds a timer unless it was cancelled first; on the loop only.
    private func addTimer(deadline: NIODeadline, number: UInt64, entry: TimerEntry) {
        guard !entry.done else { return }
        if finishing {
            entry.done = true
            entry.body(false)
            return
        }
        timerBodies[number] = entry
        timers.insert(Timer(deadline: deadline.uptimeNanoseconds, number: number))
    }
}

extension EpollEventLoop: EventLoop, NIOSerialEventLoopExecutor {
    public var inEventLoop: Bool {
        thread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    public func execute(_ task: @escaping @Sendable () -> Void) {
        queue(.closure(task))
    }

    public func _executeIsolatedUnsafeUnchecked(_ task: @escaping () -> Void) {
        queue(.closure(task))
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue(.task(UnownedJob(job)))
    }

    @discardableResult
    public func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        schedule(deadline: deadline, task)
    }

    @discardableResult
    public func scheduleTask<T>(in amount: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        schedule(deadline: .now() + amount, task)
    }

    @discardableResult
    public func _scheduleTaskIsolatedUnsafeUnchecked<T>(
        deadline: NIODeadline, _ task: @escaping () throws -> T
    ) -> Scheduled<T> {
        schedule(deadline: deadline, task)
    }

    @discardableResult
    public func _scheduleTaskIsolatedUnsafeUnchecked<T>(
        in amount: TimeAmount, _ task: @escaping () throws -> T
    ) -> Scheduled<T> {
        schedule(deadline: .now() + amount, task)
    }

    public func preconditionInEventLoop(file: StaticString, line: UInt) {
        precondition(inEventLoop, "not on the event loop", file: file, line: line)
    }

    public func preconditionNotInEventLoop(file: StaticString, line: UInt) {
        precondition(!inEventLoop, "on the event loop", file: file, line: line)
    }

    /// Stops the loop after the jobs queued before it; timers that have not run fail with
    /// `EventLoopError.shutdown`. `callback` runs on `queue` once the loop has closed its descriptors.
    public func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        let finished = inbox.withLock { inbox in
            guard !inbox.finished else { return true }
            inbox.stopCallbacks.append((queue, callback))
            if !inbox.closed {
                inbox.stopping = true
                wake(&inbox)
            }
            return false
        }
        if finished { queue.async { callback(nil) } }
    }
}

extension EpollEventLoop: CustomStringConvertible {
    public var description: String { "EpollEventLoop(epoll: \(epollFD))" }
}
