import Synchronization

/// One registered observer: the closure and a flag that stops delivery once disposed.
@usableFromInline
final class ObserverEntry<Element>: Disposable, @unchecked Sendable {
    // `handler` is immutable; `disposed` is atomic; `owner` is read and written under the owner's lock.
    @usableFromInline let handler: (Event<Element>) -> Void
    let disposed = Atomic<Bool>(false)
    @usableFromInline var id: UInt64 = 0
    weak var owner: ObserverList<Element>?

    init(_ handler: @escaping (Event<Element>) -> Void) {
        self.handler = handler
    }

    @usableFromInline
    var isDisposed: Bool { disposed.load(ordering: .acquiring) }

    @usableFromInline
    func dispose() {
        guard !disposed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        owner?.remove(id: id)
    }
}

/// The observer registry that hot signals share.
///
/// Observers are kept in an immutable array that is replaced on each change, so a delivery takes
/// a snapshot under the lock and calls observers after releasing it: observers are never called
/// while a lock is held, and an observer may send, observe or dispose re-entrantly. An observer
/// disposed during a delivery is skipped by the rest of that delivery.
@usableFromInline
final class ObserverList<Element>: @unchecked Sendable {
    @usableFromInline
    struct State {
        @usableFromInline var observers: ContiguousArray<ObserverEntry<Element>> = []
        var nextID: UInt64 = 0
        @usableFromInline var completed = false
    }

    @usableFromInline let state = Mutex(State())

    @usableFromInline
    init() {}

    /// Adds an observer. Returns nil (and does not add it) when the list has completed.
    func add(_ handler: @escaping (Event<Element>) -> Void) -> ObserverEntry<Element>? {
        let entry = ObserverEntry(handler)
        let added = state.withLock { state -> Bool in
            if state.completed { return false }
            entry.id = state.nextID
            state.nextID &+= 1
            entry.owner = self
            state.observers.append(entry)
            return true
        }
        return added ? entry : nil
    }

    func remove(id: UInt64) {
        // The removed entry is released after the lock, so no deinit runs under it.
        let removed: ObserverEntry<Element>? = state.withLock { state in
            guard let index = state.observers.firstIndex(where: { $0.id == id }) else { return nil }
            return state.observers.remove(at: index)
        }
        _ = removed
    }

    var count: Int { state.withLock { $0.observers.count } }

    /// Sends `value` to every current observer.
    @inlinable
    func send(_ value: Element) {
        let observers = state.withLock { $0.observers }
        for entry in observers where !entry.isDisposed {
            entry.handler(.next(value))
        }
    }

    /// Sends `.completed` to every current observer and removes them all; later sends do nothing.
    func complete() {
        let observers = state.withLock { state -> ContiguousArray<ObserverEntry<Element>> in
            if state.completed { return [] }
            state.completed = true
            defer { state.observers = [] }
            return state.observers
        }
        for entry in observers where !entry.isDisposed {
            entry.disposed.store(true, ordering: .releasing)
            entry.handler(.completed)
        }
    }

    var isCompleted: Bool { state.withLock { $0.completed } }
}
