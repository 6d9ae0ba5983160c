import NIOCore
import Synchronization

/// Runs items one at a time, in the order they were handed over, without a thread of its own: the thread that
/// hands over an item while none is running runs it at once, and then every item handed over meanwhile (from
/// any thread) before it returns. An item handed over while another runs (on another thread, or from inside the
/// running item) waits for it.
///
/// A delivery therefore costs no thread switch and, once the buffer has grown, no allocation. What runs here
/// must not block: it may be running on an event loop of the client.
final class InlineSerialQueue<Item: Sendable>: Sendable {
    private struct State {
        var items = CircularBuffer<Item>(initialCapacity: 4)
        var running = false
    }

    private let state = Mutex(State())

    init() {}

    /// Runs `item` now, or after the items before it. Every caller passes the same `run`: whichever thread is
    /// running items runs those handed over meanwhile with its own.
    func submit(_ item: Item, run: (Item) -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.running {
                state.items.append(item)
                return false
            }
            state.running = true
            return true
        }
        guard runNow else { return }
        run(item)
        while let next = state.withLock({ state -> Item? in
            guard let next = state.items.popFirst() else {
                state.running = false
                return nil
            }
            return next
        }) {
            run(next)
        }
    }
}
