#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A mutex that serializes the writers of one observable collection. It is error-checking, so a
/// writer that tries to write again from inside its own batch stops with a message instead of
/// deadlocking.
final class WriterLock: @unchecked Sendable {
    // Sendable: it guards no value; the pthread mutex is the synchronization itself, made to be
    // locked and unlocked from any thread.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        let result = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock(_ owner: StaticString) {
        let result = pthread_mutex_lock(mutex)
        precondition(result != EDEADLK, "\(owner) written to from inside its own batch update")
        precondition(result == 0, "pthread_mutex_lock failed: \(result)")
    }

    func unlock() {
        pthread_mutex_unlock(mutex)
    }
}

/// One observer of a ``ChangeStream``: its handle and its closure, which is called on a writer's
/// thread.
struct ChangeObserver<Change>: Sendable {
    let entry: ObserverEntry
    let handler: UncheckedSendable<(Event<Change>) -> Void>

    init(entry: ObserverEntry, handler: @escaping (Event<Change>) -> Void) {
        self.entry = entry
        self.handler = UncheckedSendable(handler)
    }
}

/// The state and the ordered event delivery shared by the observable collections.
///
/// Writers are serialized by a ``WriterLock``; the stored value is read and written under a
/// separate state lock, so readers never wait for a batch in progress. Each write queues its
/// change event under the state lock; whichever thread finds nobody delivering drains the queue,
/// calling observers with no lock held. So every observer sees the changes exactly in the order
/// the writes happened, each change set fits the value of the previous event, and an observer may
/// read or write the collection it observes (a write from inside an observer is delivered after
/// the current event has reached every observer).
///
/// A new observer is queued like a change: it receives an initial event made from the value at
/// the moment it registered, and then exactly the changes written after that moment.
///
/// It is `Sendable` when the value and the changes are.
final class ChangeStream<Storage, Change>: ObserverRegistry {
    fileprivate enum Pending {
        case change(Change)
        case subscribe(ChangeObserver<Change>, Storage)
        case complete
    }

    fileprivate struct State {
        var storage: Storage
        var version: UInt64 = 0
        var observers: [ChangeObserver<Change>] = []
        var pending: [Pending] = []
        var draining = false
        var completed = false
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>
    private let writer = WriterLock()
    private let owner: StaticString
    private let makeInitial: @Sendable (Storage) -> Change

    /// - Parameters:
    ///   - owner: the collection's type name, for the message of a nested write.
    ///   - makeInitial: the first event for a new observer, from the current value.
    init(_ storage: Storage, owner: StaticString, makeInitial: @escaping @Sendable (Storage) -> Change) {
        state = Locked(State(storage: storage))
        self.owner = owner
        self.makeInitial = makeInitial
    }

    /// The current value.
    var value: Storage { state.withLock { $0.storage } }

    /// The current value and the number of writes so far.
    var valueAndVersion: (Storage, UInt64) { state.withLock { ($0.storage, $0.version) } }

    var observerCount: Int { state.withLock { $0.observers.count } }

    /// Edits the value in place under both locks. `body` must be this module's own code (it runs
    /// under the state lock); it returns the change to deliver, or nil when nothing changed.
    func mutate<Result>(_ body: (inout Storage) -> (Change?, Result)) -> Result {
        writer.lock(owner)
        let (result, drain) = state.withLock { state -> (Result, Bool) in
            let (change, result) = body(&state.storage)
            guard let change else { return (result, false) }
            state.version &+= 1
            return (result, Self.enqueue(.change(change), in: &state))
        }
        writer.unlock()
        if drain { self.drain() }
        return result
    }

    /// Computes a new value from the current one with only the writer lock held (so `body` may run
    /// user code that reads the collection), then stores it and delivers its change.
    ///
    /// `body` gets the current value and version and returns the new value and its change, or nil
    /// to leave the value as it is.
    func write<Result>(
        _ body: (Storage, UInt64) throws -> (update: (Storage, Change)?, result: Result)
    ) rethrows -> Result {
        writer.lock(owner)
        let drain: Bool
        let result: Result
        do {
            let (current, version) = valueAndVersion
            let outcome = try body(current, version)
            result = outcome.result
            if let (storage, change) = outcome.update {
                drain = state.withLock { state in
                    state.storage = storage
                    state.version &+= 1
                    return Self.enqueue(.change(change), in: &state)
                }
            } else {
                drain = false
            }
        } catch {
            writer.unlock()
            throw error
        }
        writer.unlock()
        if drain { self.drain() }
        return result
    }

    /// Registers `handler`: it gets the initial event, then every later change.
    func observe(_ handler: @escaping (Event<Change>) -> Void) -> any Disposable {
        let registered = state.withLock { state -> (ChangeObserver<Change>, Bool)? in
            if state.completed { return nil }
            let observer = ChangeObserver(entry: ObserverEntry(id: state.nextID, owner: self), handler: handler)
            state.nextID &+= 1
            return (observer, Self.enqueue(.subscribe(observer, state.storage), in: &state))
        }
        guard let (observer, drain) = registered else {
            handler(.completed)
            return NonDisposable.instance
        }
        if drain { self.drain() }
        return observer.entry
    }

    /// Sends `.completed` to every observer (after every change already written).
    func complete() {
        let drain = state.withLock { state in Self.enqueue(.complete, in: &state) }
        if drain { self.drain() }
    }

    func remove(id: UInt64) {
        let removed = state.withLock { state -> ChangeObserver<Change>? in
            guard let index = state.observers.firstIndex(where: { $0.entry.id == id }) else { return nil }
            return state.observers.remove(at: index)
        }
        _ = removed  // released after the lock
    }

    /// Queues `item`; returns true when the caller must drain (nobody else is delivering).
    private static func enqueue(_ item: Pending, in state: inout State) -> Bool {
        state.pending.append(item)
        if state.draining { return false }
        state.draining = true
        return true
    }

    private func drain() {
        while true {
            let batch = state.withLock { state -> [Pending]? in
                if state.pending.isEmpty {
                    state.draining = false
                    return nil
                }
                defer { state.pending = [] }
                return state.pending
            }
            guard let batch else { return }
            for item in batch {
                deliver(item)
            }
        }
    }

    private func deliver(_ item: Pending) {
        switch item {
        case .change(let change):
            let observers = state.withLock { $0.observers }
            for observer in observers where !observer.entry.isDisposed {
                observer.handler.value(.next(change))
            }
        case .subscribe(let observer, let storage):
            let added = state.withLock { state -> Bool in
                if observer.entry.isDisposed || state.completed { return false }
                state.observers.append(observer)
                return true
            }
            if added {
                observer.handler.value(.next(makeInitial(storage)))
            } else if !observer.entry.isDisposed && observer.entry.markDisposed() {
                observer.handler.value(.completed)
            }
        case .complete:
            let observers = state.withLock { state -> [ChangeObserver<Change>] in
                state.completed = true
                defer { state.observers = [] }
                return state.observers
            }
            for observer in observers where observer.entry.markDisposed() {
                observer.handler.value(.completed)
            }
        }
    }
}

extension ChangeStream.Pending: Sendable where Storage: Sendable, Change: Sendable {}
extension ChangeStream.State: Sendable where Storage: Sendable, Change: Sendable {}
extension ChangeStream: Sendable where Storage: Sendable, Change: Sendable {}
