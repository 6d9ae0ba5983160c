import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Something observers are registered with, that an ``ObserverEntry`` takes its observer out of.
@usableFromInline
protocol ObserverRegistry: AnyObject {
    /// Takes out the observer registered under `id`, if it is still there. It must touch nothing but
    /// the registrations (no value), under the registry's lock, and release the observer after it.
    func remove(id: UInt64)
}

/// The handle of one registered observer: a flag that stops delivery once disposed.
///
/// The observer closure itself lives only in its registry (see ``ObserverList/Slot``), so disposing
/// releases it even while the caller still holds this handle.
///
/// The handle holds its registry strongly: forming, loading and destroying a weak reference took a
/// quarter of an observe and dispose (`scripts/profile-observe-dispose.sh`). The registry holds the
/// handle until it is disposed, so its owner breaks that cycle when it goes away:
/// ``ObserverList/removeAll()`` or ``ChangeStream/complete()`` in the owner's `deinit`.
@usableFromInline
final class ObserverEntry: Disposable, @unchecked Sendable {
    // Sendable, as a `Disposable` must be, also for a registry of non-Sendable values: `disposed`
    // is atomic, `id` is immutable, and `owner` is immutable and only used to call `remove(id:)`,
    // which touches the registrations under the registry's lock, no value.
    @usableFromInline let disposed = Atomic<Bool>(false)
    @usableFromInline let id: UInt64
    @usableFromInline let owner: any ObserverRegistry

    @usableFromInline
    init(id: UInt64, owner: any ObserverRegistry) {
        self.id = id
        self.owner = owner
    }

    @usableFromInline
    var isDisposed: Bool { disposed.load(ordering: .acquiring) }

    @inlinable
    func dispose() {
        guard !disposed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        owner.remove(id: id)
    }

    /// Marks the observer disposed without telling the registry (which is dropping it anyway);
    /// returns whether it was not disposed yet.
    @inlinable
    func markDisposed() -> Bool {
        !disposed.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// The observer registry that hot signals share.
///
/// Observers are kept in an array that a delivery copies under the lock (a reference-count
/// increment, the array is shared until the next change) and calls after releasing it: observers
/// are never called while a lock is held, and an observer may send, observe or dispose
/// re-entrantly. An observer disposed during a delivery is skipped by the rest of that delivery.
///
/// The list can also hold a current value (``current``) under the same lock, for hot signals that
/// remember their latest value (``Property``): storing it and taking the snapshot is one lock.
///
/// It is `Sendable` when `Element` is: its state lives in a ``Locked``.
@usableFromInline
final class ObserverList<Element>: ObserverRegistry {
    /// A registered observer: its handle and its closure, which is called on the sending thread.
    @usableFromInline
    struct Slot: Sendable {
        @usableFromInline let entry: ObserverEntry
        @usableFromInline let handler: UncheckedSendable<(Event<Element>) -> Void>

        @inlinable
        init(entry: ObserverEntry, handler: @escaping (Event<Element>) -> Void) {
            self.entry = entry
            self.handler = UncheckedSendable(handler)
        }
    }

    @usableFromInline
    struct State {
        @usableFromInline var observers: ContiguousArray<Slot> = []
        @usableFromInline var nextID: UInt64 = 0
        @usableFromInline var completed = false
        @usableFromInline var current: Element?
    }

    @usableFromInline let state: Locked<State>

    @usableFromInline
    init() {
        state = Locked(State())
    }

    @usableFromInline
    init(current: Element) {
        state = Locked(State(current: current))
    }

    /// Adds an observer. Returns nil (and does not add it) when the list has completed.
    @inlinable
    func add(_ handler: @escaping (Event<Element>) -> Void) -> ObserverEntry? {
        addReadingCurrent(handler)?.entry
    }

    /// Adds an observer and returns the current value read in the same critical section.
    @inlinable
    func addReadingCurrent(
        _ handler: @escaping (Event<Element>) -> Void
    ) -> (entry: ObserverEntry, current: Element?)? {
        state.withLock { state -> (entry: ObserverEntry, current: Element?)? in
            if state.completed { return nil }
            let entry = ObserverEntry(id: state.nextID, owner: self)
            state.nextID &+= 1
            state.observers.append(Slot(entry: entry, handler: handler))
            return (entry, state.current)
        }
    }

    @inlinable
    func remove(id: UInt64) {
        // Called from the handle, where `Element` is not known: without `withLock` and its closure,
        // this unspecialized code looks up no generic metadata but the slots'. The removed slot is
        // released after the lock, so no deinit runs under it.
        pthread_mutex_lock(state.mutex)
        var index = 0
        let count = state.state.pointee.observers.count
        while index < count, state.state.pointee.observers[index].entry.id != id { index += 1 }
        let removed = index < count ? state.state.pointee.observers.remove(at: index) : nil
        pthread_mutex_unlock(state.mutex)
        _ = removed
    }

    /// Releases every observer without an event: the owner went away.
    func removeAll() {
        let removed = state.withLock { state -> ContiguousArray<Slot> in
            defer { state.observers = [] }
            return state.observers
        }
        _ = removed  // released after the lock
    }

    var count: Int { state.withLock { $0.observers.count } }

    /// The stored current value.
    @inlinable
    var current: Element? { state.withLock { $0.current } }

    /// Sends `value` to every current observer.
    @inlinable
    func send(_ value: Element) {
        let observers = state.withLock { $0.observers }
        Self.deliver(value, to: observers)
    }

    /// Stores `value` as the current value and sends it to every current observer.
    @inlinable
    func storeAndSend(_ value: Element) {
        let observers = state.withLock { state in
            state.current = value
            return state.observers
        }
        Self.deliver(value, to: observers)
    }

    @inlinable
    static func deliver(_ value: Element, to observers: ContiguousArray<Slot>) {
        for slot in observers where !slot.entry.isDisposed {
            slot.handler.value(.next(value))
        }
    }

    /// Sends `.completed` to every current observer and removes them all; later sends do nothing.
    func complete() {
        let observers = state.withLock { state -> ContiguousArray<Slot> in
            if state.completed { return [] }
            state.completed = true
            defer { state.observers = [] }
            return state.observers
        }
        for slot in observers where slot.entry.markDisposed() {
            slot.handler.value(.completed)
        }
    }

    var isCompleted: Bool { state.withLock { $0.completed } }
}

extension ObserverList.State: Sendable where Element: Sendable {}
extension ObserverList: Sendable where Element: Sendable {}
