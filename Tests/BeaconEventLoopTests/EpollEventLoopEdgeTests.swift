import BeaconEventLoop
import Dispatch
import NIOCore
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The edges of the loop the daemon relies on: descriptor numbers reused within a round, more ready descriptors than
/// one `epoll_wait` returns, work queued while the loop shuts down, timers cancelled from other threads, and the
/// SwiftNIO `EventLoop` behaviour the daemon and the client use.
@Suite("EpollEventLoop edges")
struct EpollEventLoopEdgeTests {
    /// Counts the calls of its `ready`, reading what arrives; on the loop only.
    final class Counter: EpollHandler, @unchecked Sendable {
        let fd: Int32
        var calls = 0
        var bytes = 0
        var onReady: (() -> Void)?

        init(fd: Int32) { self.fd = fd }

        func ready(_ readiness: EpollReadiness) {
            calls += 1
            var buffer = [UInt8](repeating: 0, count: 16)
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { bytes += count }
            onReady?()
        }
    }

    @Test("a descriptor number reused within a round does not hand the old registration's event to the new handler")
    func numberReusedWithinARound() async throws {
        try await withLoop { loop in
            let first = try socketPair()
            let second = try socketPair()
            let fresh = try socketPair()
            // The peers; the two watched ends (one of them by then the fresh socket) are closed at the end.
            defer { for fd in [first[1], second[1], fresh[1]] { close(fd) } }
            /// Whichever of the two runs first closes the other's descriptor and puts a new, silent socket under the
            /// same number, with a new handler.
            final class Swapper: EpollHandler, @unchecked Sendable {
                let fd: Int32
                let loop: EpollEventLoop
                let state: SwapState
                init(fd: Int32, loop: EpollEventLoop, state: SwapState) {
                    (self.fd, self.loop, self.state) = (fd, loop, state)
                }
                func ready(_ readiness: EpollReadiness) {
                    state.heard += 1
                    var byte: UInt8 = 0
                    _ = read(fd, &byte, 1)
                    guard !state.swapped else { return }
                    state.swapped = true
                    let other = fd == state.descriptors.0 ? state.descriptors.1 : state.descriptors.0
                    loop.deregister(other)
                    // dup2 closes `other` and gives its number to the fresh socket.
                    guard dup2(state.replacement.fd, other) == other else { return }
                    state.reused = other
                    state.replacement = Counter(fd: other)
                    try? loop.register(other, interest: .readable, handler: state.replacement)
                }
            }
            final class SwapState: @unchecked Sendable {
                let descriptors: (Int32, Int32)
                var replacement: Counter
                var swapped = false
                var heard = 0
                var reused: Int32 = -1
                init(descriptors: (Int32, Int32), replacement: Counter) {
                    (self.descriptors, self.replacement) = (descriptors, replacement)
                }
            }
            let state = SwapState(descriptors: (first[0], second[0]), replacement: Counter(fd: fresh[0]))
            try await loop.submit {
                try loop.register(
                    first[0], interest: .readable, handler: Swapper(fd: first[0], loop: loop, state: state))
                try loop.register(
                    second[0], interest: .readable, handler: Swapper(fd: second[0], loop: loop, state: state))
                // Both readable before the loop waits: both events come back from one epoll_wait.
                #expect(write(first[1], "x", 1) == 1)
                #expect(write(second[1], "x", 1) == 1)
            }.get()
            try await loop.submit {}.get()
            try await loop.submit {
                #expect(state.swapped)
                #expect(state.heard == 1)
                // The event of the replaced registration, in the same round, reached neither handler.
                #expect(state.replacement.calls == 0)
            }.get()
            close(fresh[0])
            // The new registration works: bytes written to the fresh socket's peer reach its handler.
            let reached = loop.makePromise(of: Void.self)
            try await loop.submit {
                state.replacement.onReady = { reached.succeed() }
                #expect(write(fresh[1], "y", 1) == 1)
            }.get()
            try await reached.futureResult.get()
            try await loop.submit {
                #expect(state.replacement.bytes == 1)
                for fd in [first[0], second[0]] {
                    loop.deregister(fd)
                    close(fd)
                }
            }.get()
        }
    }

    @Test("more ready descriptors than one epoll_wait returns: every handler hears of its bytes, once")
    func manyReadyAtOnce() async throws {
        try await withLoop { loop in
            let count = 150
            let pairs = try (0..<count).map { _ in try socketPair() }
            defer { for fd in pairs.joined() { close(fd) } }
            let counters = pairs.map { Counter(fd: $0[0]) }
            let all = loop.makePromise(of: Void.self)
            nonisolated(unsafe) var heard = 0
            try await loop.submit {
                for (pair, counter) in zip(pairs, counters) {
                    counter.onReady = {
                        heard += 1
                        if heard == count { all.succeed() }
                    }
                    try loop.register(pair[0], interest: .readable, handler: counter)
                    #expect(write(pair[1], "z", 1) == 1)
                }
            }.get()
            try await all.futureResult.get()
            try await loop.submit {
                #expect(counters.allSatisfy { $0.calls == 1 && $0.bytes == 1 })
                for pair in pairs { loop.deregister(pair[0]) }
            }.get()
        }
    }

    @Test("work queued from many threads while the loop shuts down runs before it stops, or not at all")
    func executeRacingShutdown() async throws {
        let loop = try EpollEventLoop.start(name: "racing-loop")
        let stopped = Atomic(false)
        let ranAfterStop = Atomic(0)
        let ran = Atomic(0)
        let queued = Atomic(0)
        let threads = 4
        let started = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for _ in 0..<threads {
            DispatchQueue.global().async(group: group) {
                started.signal()
                for _ in 0..<20_000 {
                    loop.execute {
                        ran.add(1, ordering: .relaxed)
                        if stopped.load(ordering: .acquiring) { ranAfterStop.add(1, ordering: .relaxed) }
                    }
                    queued.add(1, ordering: .relaxed)
                }
            }
        }
        for _ in 0..<threads { started.wait() }
        try await loop.shutdownGracefully()
        stopped.store(true, ordering: .releasing)
        group.wait()
        #expect(ranAfterStop.load(ordering: .relaxed) == 0)
        #expect(ran.load(ordering: .relaxed) <= queued.load(ordering: .relaxed))
        // Work queued after the stop is dropped, not run: the count does not move.
        let before = ran.load(ordering: .relaxed)
        loop.execute { ran.add(1, ordering: .relaxed) }
        #expect(ran.load(ordering: .relaxed) == before)
    }

    @Test("timers cancelled from other threads never run, and their futures fail as cancelled")
    func cancelFromOtherThreads() async throws {
        try await withLoop { loop in
            let ran = Atomic(0)
            let timers = (0..<400).map { _ in
                loop.scheduleTask(in: .milliseconds(30)) { ran.add(1, ordering: .relaxed) }
            }
            DispatchQueue.concurrentPerform(iterations: 4) { part in
                for index in stride(from: part, to: timers.count, by: 4) { timers[index].cancel() }
            }
            // A timer scheduled after them, due later: once it ran, theirs were due long ago.
            try await loop.scheduleTask(in: .milliseconds(80)) {}.futureResult.get()
            #expect(ran.load(ordering: .relaxed) == 0)
            for timer in timers {
                await #expect(throws: EventLoopError.cancelled) { try await timer.futureResult.get() }
            }
        }
    }

    @Test("SwiftNIO's EventLoop: promises, flatSubmit, scheduled values, hop(to:) and callbacks on the loop")
    func nioSemantics() async throws {
        try await withLoop { loop in
            // A promise completed elsewhere runs its callbacks on the loop.
            let promise = loop.makePromise(of: Int.self)
            let onLoop = promise.futureResult.map { value -> (Int, Bool) in (value * 2, loop.inEventLoop) }
            DispatchQueue.global().async { promise.succeed(21) }
            let (doubled, wasOnLoop) = try await onLoop.get()
            #expect(doubled == 42 && wasOnLoop)

            // flatSubmit chains a future made on the loop.
            let chained = try await loop.flatSubmit { loop.makeSucceededFuture("chained") }.get()
            #expect(chained == "chained")

            // A scheduled task's value, and the order of two timers with the same deadline: scheduling order.
            let deadline = NIODeadline.now() + .milliseconds(20)
            let order = Mutex<[Int]>([])
            let one = loop.scheduleTask(deadline: deadline) { order.withLock { $0.append(1) } }
            let two = loop.scheduleTask(deadline: deadline) {
                order.withLock { $0.append(2) }
                return "two"
            }
            #expect(try await two.futureResult.get() == "two")
            try await one.futureResult.get()
            #expect(order.withLock { $0 } == [1, 2])

            // hop(to:) from another loop lands on this one.
            let other = try EpollEventLoop.start(name: "other-loop")
            let hopped = try await other.submit { 7 }.hop(to: loop).map { ($0, loop.inEventLoop) }.get()
            #expect(hopped == (7, true))
            try await other.shutdownGracefully()

            // A failed future carries its error to the loop.
            struct Failure: Error, Equatable {}
            await #expect(throws: Failure.self) {
                try await loop.submit { throw Failure() }.get()
            }
        }
    }
}
