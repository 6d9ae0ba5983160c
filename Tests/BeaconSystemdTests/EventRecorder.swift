import Synchronization

/// Collects an `AsyncStream`'s elements and lets a test wait for the next ones with a deadline.
final class EventRecorder<Event: Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var events: [Event] = []
        var consumed = 0
        var waiters: [Waiter] = []
        var nextID = 0
    }
    private let state = Mutex(State())

    init(_ stream: AsyncStream<Event>) {
        Task { [self] in
            for await event in stream { record(event) }
        }
    }

    /// Everything recorded so far.
    var all: [Event] { state.withLock { $0.events } }

    private func record(_ event: Event) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            let count = state.events.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// The next `count` events after those already taken; fewer when `limit` passes first.
    func next(_ count: Int, within limit: Duration = .seconds(10)) async -> [Event] {
        let target = state.withLock { $0.consumed + count }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForCount(target) }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
        return state.withLock { state in
            let end = min(target, state.events.count)
            let taken = Array(state.events[state.consumed..<end])
            state.consumed = end
            return taken
        }
    }

    /// Takes events one by one until one satisfies `stop` (included) or `limit` passes without a new one.
    func collect(until stop: (Event) -> Bool, within limit: Duration = .seconds(10)) async -> [Event] {
        var taken: [Event] = []
        while true {
            let next = await self.next(1, within: limit)
            guard let event = next.first else { return taken }
            taken.append(event)
            if stop(event) { return taken }
        }
    }

    /// Events recorded after those already taken, without waiting.
    var untaken: [Event] { state.withLock { Array($0.events[$0.consumed...]) } }

    private func waitForCount(_ count: Int) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.events.count >= count || Task.isCancelled { return true }
                    state.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }
}
