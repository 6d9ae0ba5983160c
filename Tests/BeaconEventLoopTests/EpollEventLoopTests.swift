import BeaconEventLoop
import Dispatch
import NIOCore
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("EpollEventLoop")
struct EpollEventLoopTests {
    @Test("tasks from other threads run on the loop, in the order they were queued")
    func executeOrder() async throws {
        try await withLoop { loop in
            #expect(!loop.inEventLoop)
            let seen = Mutex<[Int]>([])
            let futures = (0..<1000).map { index in
                loop.submit {
                    #expect(loop.inEventLoop)
                    seen.withLock { $0.append(index) }
                }
            }
            try await EventLoopFuture.andAllSucceed(futures, on: loop).get()
            #expect(seen.withLock { $0 } == Array(0..<1000))
        }
    }

    @Test("tasks queued on the loop run after the current one, in order")
    func executeOnLoop() async throws {
        try await withLoop { loop in
            let order = try await loop.submit { () -> EventLoopFuture<[String]> in
                let promise = loop.makePromise(of: [String].self)
                nonisolated(unsafe) var order = ["first"]
                loop.execute { order.append("second") }
                loop.assumeIsolated().execute {
                    order.append("third")
                    promise.succeed(order)
                }
                order.append("after queuing")
                return promise.futureResult
            }.get().get()
            #expect(order == ["first", "after queuing", "second", "third"])
        }
    }

    @Test("many threads queue at once and nothing is lost")
    func concurrentQueuing() async throws {
        try await withLoop { loop in
            /// Counted on the loop only.
            final class Count: @unchecked Sendable {
                var value = 0
            }
            let count = Count()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        let futures = (0..<500).map { _ in
                            loop.submit {
                                loop.preconditionInEventLoop()
                                count.value += 1
                            }
                        }
                        try await EventLoopFuture.andAllSucceed(futures, on: loop).get()
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await loop.submit { count.value }.get() == 4000)
        }
    }

    @Test("timers run in deadline order, not in the order they were scheduled")
    func timerOrder() async throws {
        try await withLoop { loop in
            let now = NIODeadline.now()
            let delays = [40, 10, 30, 20, 10, 0]
            let seen = Mutex<[Int]>([])
            // Scheduled in one job, so that none is due before the last is scheduled.
            let tasks = try await loop.submit {
                delays.enumerated().map { index, delay in
                    loop.scheduleTask(deadline: now + .milliseconds(Int64(delay))) {
                        seen.withLock { $0.append(index) }
                        #expect(NIODeadline.now() >= now + .milliseconds(Int64(delay)))
                    }
                }
            }.get()
            for task in tasks { try await task.futureResult.get() }
            // Due at once: in the order scheduled.
            #expect(seen.withLock { $0 } == [5, 1, 4, 3, 2, 0])
        }
    }

    @Test("a cancelled timer does not run and its future fails as cancelled")
    func cancelTimer() async throws {
        try await withLoop { loop in
            let ran = Mutex(false)
            let cancelled = loop.scheduleTask(in: .hours(1)) { ran.withLock { $0 = true } }
            let later = loop.scheduleTask(in: .milliseconds(20)) {}
            cancelled.cancel()
            await #expect(throws: EventLoopError.cancelled) { try await cancelled.futureResult.get() }
            try await later.futureResult.get()
            #expect(!ran.withLock { $0 })
            // Cancelling from the loop, after it ran: nothing happens.
            try await loop.submit { later.cancel() }.get()
            try await later.futureResult.get()
        }
    }

    @Test("a timer cancelled on the loop before the loop has taken it in from another thread does not run")
    func cancelBeforeAdded() async throws {
        try await withLoop { loop in
            let ran = Mutex(false)
            let slot = Mutex<Scheduled<Void>?>(nil)
            let scheduled = DispatchSemaphore(value: 0)
            let cancelling = loop.submit {
                // On the loop until the other thread has scheduled: its timer then still waits in the inbox.
                scheduled.wait()
                slot.withLock { $0 }?.cancel()
            }
            let task = loop.scheduleTask(in: .milliseconds(1)) { ran.withLock { $0 = true } }
            slot.withLock { $0 = task }
            scheduled.signal()
            try await cancelling.get()
            await #expect(throws: EventLoopError.cancelled) { try await task.futureResult.get() }
            // Past its deadline, the loop going on: it did not run.
            try await loop.scheduleTask(in: .milliseconds(5)) {}.futureResult.get()
            #expect(!ran.withLock { $0 })
        }
    }

    @Test("a timer that throws fails its future with the error")
    func throwingTimer() async throws {
        struct Failure: Error, Equatable {}
        try await withLoop { loop in
            let task = loop.scheduleTask(in: .milliseconds(1)) { () throws -> Int in throw Failure() }
            await #expect(throws: Failure()) { try await task.futureResult.get() }
        }
    }

    @Test("many cancelled timers leave the loop's queue")
    func manyCancelledTimers() async throws {
        try await withLoop { loop in
            let result = try await loop.submit { () -> EventLoopFuture<Int> in
                for _ in 0..<10_000 {
                    loop.assumeIsolated().scheduleTask(in: .hours(1)) {}.cancel()
                }
                return loop.scheduleTask(in: .milliseconds(1)) { 7 }.futureResult
            }.get().get()
            #expect(result == 7)
        }
    }

    @Test("timers still pending when the loop stops fail as shut down")
    func timersAtShutdown() async throws {
        let loop = try EpollEventLoop.start()
        let pending = loop.scheduleTask(in: .hours(1)) {}
        let queued = loop.submit { 1 }
        // Read the results where they are made: after the loop stops, nothing can run on it.
        let results = Mutex<(Int?, (any Error)?)>((nil, nil))
        queued.whenSuccess { value in results.withLock { $0.0 = value } }
        pending.futureResult.whenFailure { error in results.withLock { $0.1 = error } }
        try await loop.shutdownGracefully()
        let (value, error) = results.withLock { $0 }
        #expect(value == 1)
        #expect(error as? EventLoopError == .shutdown)
    }

    @Test("a descriptor's handler hears of bytes to read, of room to write, and of the peer's close")
    func readiness() async throws {
        try await withLoop { loop in
            let pair = try socketPair()
            defer { for fd in pair { close(fd) } }
            let handler = Recorder(fd: pair[0], loop: loop)
            try await loop.submit { try loop.register(pair[0], interest: .readable, handler: handler) }.get()

            #expect(write(pair[1], "ping", 4) == 4)
            #expect(try await handler.next() == .read("ping"))

            // Room to write, once asked for: a fresh socket has room at once.
            try await loop.submit { try loop.reregister(pair[0], interest: [.readable, .writable]) }.get()
            let event = try await handler.next()
            #expect(event == .writable)

            // Read interest off: bytes wait unread until it is on again.
            try await loop.submit { try loop.reregister(pair[0], interest: []) }.get()
            #expect(write(pair[1], "pong", 4) == 4)
            try await loop.submit { #expect(handler.events.isEmpty) }.get()
            try await loop.submit { try loop.reregister(pair[0], interest: .readable) }.get()
            #expect(try await handler.next() == .read("pong"))

            shutdown(pair[1], Int32(SHUT_WR))
            #expect(try await handler.next() == .closed)
            try await loop.submit { loop.deregister(pair[0]) }.get()
        }
    }

    @Test("a handler deregistered during a round hears nothing more in it")
    func deregisterDuringRound() async throws {
        try await withLoop { loop in
            let first = try socketPair()
            let second = try socketPair()
            defer { for fd in first + second { close(fd) } }
            /// The descriptors whose handlers were told something; on the loop only.
            final class Heard: @unchecked Sendable {
                var fds: [Int32] = []
            }
            let heard = Heard()
            final class Killer: EpollHandler, @unchecked Sendable {
                let fd: Int32
                let other: Int32
                let loop: EpollEventLoop
                let heard: Heard
                init(fd: Int32, other: Int32, loop: EpollEventLoop, heard: Heard) {
                    (self.fd, self.other, self.loop, self.heard) = (fd, other, loop, heard)
                }
                func ready(_ readiness: EpollReadiness) {
                    heard.fds.append(fd)
                    loop.deregister(other)
                    loop.deregister(fd)
                }
            }
            let a = Killer(fd: first[0], other: second[0], loop: loop, heard: heard)
            let b = Killer(fd: second[0], other: first[0], loop: loop, heard: heard)
            // Both readable before the loop next waits: both events come in one round.
            try await loop.submit {
                try loop.register(first[0], interest: .readable, handler: a)
                try loop.register(second[0], interest: .readable, handler: b)
                #expect(write(first[1], "x", 1) == 1)
                #expect(write(second[1], "x", 1) == 1)
            }.get()
            // Both events were collected in the round after the task; the next task runs after that round.
            try await loop.submit {}.get()
            try await loop.submit { #expect(heard.fds.count == 1) }.get()
        }
    }

    @Test("an idle loop does not wake, also after a timer was cancelled")
    func idleLoopSleeps() async throws {
        try await withLoop { loop in
            let thread = try await loop.submit { () -> String in
                loop.scheduleTask(in: .milliseconds(50)) {}.cancel()
                return threadDirectory()
            }.get()
            // The cancelled timer has left the queue once the loop waits again: a task queued now runs after that.
            try await loop.submit {}.get()
            // Read once the loop's thread is asleep in epoll_wait again.
            try waitAsleep(thread)
            let before = try contextSwitches(of: thread)
            // The window in which a wake-up would show: past the cancelled timer's deadline.
            try await Task.sleep(for: .milliseconds(150))
            #expect(try contextSwitches(of: thread) == before)
        }
    }

    @Test("Swift tasks can run on the loop as their executor")
    func executor() async throws {
        try await withLoop { loop in
            actor OnLoop {
                let loop: EpollEventLoop
                init(loop: EpollEventLoop) { self.loop = loop }
                nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
                func onLoop() -> Bool { loop.inEventLoop }
            }
            let actor = OnLoop(loop: loop)
            #expect(await actor.onLoop())
        }
    }
}

/// Returns once the thread (its directory under /proc) is asleep (state S), or fails after 5 s.
private func waitAsleep(_ thread: String) throws {
    for _ in 0..<5000 {
        guard let file = fopen(thread + "/stat", "r") else { throw EpollError(call: "fopen", errno: errno) }
        var line = [UInt8](repeating: 0, count: 512)
        let read = line.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { fgets($0.baseAddress, Int32($0.count), file) != nil }
        }
        fclose(file)
        // "TID (name) S ...": the state follows the name's closing parenthesis.
        if read, let close = line.lastIndex(of: UInt8(ascii: ")")), close + 2 < line.count,
            line[close + 2] == UInt8(ascii: "S")
        {
            return
        }
        usleep(1000)
    }
    throw EpollError(call: "waiting for the loop's thread to sleep", errno: ETIMEDOUT)
}

/// The calling thread's directory under /proc (`PID/task/TID`).
private func threadDirectory() -> String {
    var path = [UInt8](repeating: 0, count: 128)
    let length = readlink("/proc/thread-self", &path, path.count)
    return "/proc/" + String(decoding: path.prefix(max(length, 0)), as: UTF8.self)
}

/// How often a thread (its directory under /proc) gave up the processor: each wake-up from `epoll_wait` adds one.
private func contextSwitches(of thread: String) throws -> Int {
    guard let file = fopen(thread + "/status", "r") else { throw EpollError(call: "fopen", errno: errno) }
    defer { fclose(file) }
    var line = [UInt8](repeating: 0, count: 256)
    while line.withUnsafeMutableBufferPointer({ buffer in
        buffer.withMemoryRebound(to: CChar.self) { fgets($0.baseAddress, Int32($0.count), file) != nil }
    }) {
        let text = String(decoding: line.prefix { $0 != 0 }, as: UTF8.self)
        if text.hasPrefix("voluntary_ctxt_switches:") {
            return Int(
                text.dropFirst("voluntary_ctxt_switches:".count).trimmingPrefix(while: \.isWhitespace)
                    .prefix { $0.isNumber }) ?? -1
        }
    }
    return -1
}

/// A connected pair of non-blocking Unix stream sockets.

/// Reads what its descriptor receives and reports what the loop told it, on the loop.
private final class Recorder: EpollHandler, @unchecked Sendable {
    enum Event: Equatable {
        case read(String)
        case writable
        case closed
    }

    let fd: Int32
    let loop: EpollEventLoop
    var events: [Event] = []
    var waiter: EventLoopPromise<Event>?

    init(fd: Int32, loop: EpollEventLoop) {
        self.fd = fd
        self.loop = loop
    }

    func ready(_ readiness: EpollReadiness) {
        if readiness.isWritable {
            // Level-triggered: told again each round until asked no more.
            try? loop.reregister(fd, interest: .readable)
            deliver(.writable)
        }
        guard readiness.isReadable else { return }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &bytes, bytes.count)
        if count > 0 {
            deliver(.read(String(decoding: bytes[..<count], as: UTF8.self)))
        } else if count == 0 {
            deliver(.closed)
            try? loop.reregister(fd, interest: [])
        }
    }

    private func deliver(_ event: Event) {
        if let waiter {
            self.waiter = nil
            waiter.succeed(event)
        } else {
            events.append(event)
        }
    }

    /// The next event, waited for on the loop.
    func next() async throws -> Event {
        try await loop.flatSubmit { [self] in
            if !events.isEmpty { return loop.makeSucceededFuture(events.removeFirst()) }
            let promise = loop.makePromise(of: Event.self)
            waiter = promise
            return promise.futureResult
        }.get()
    }
}
