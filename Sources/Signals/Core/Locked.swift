#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a mutex, for state of any type (also non-`Sendable` values, which the
/// standard library's `Mutex` cannot hand across its `sending` boundary).
///
/// The mutex and the value share one allocation reached through a pointer, so an access costs a
/// lock and an unlock and nothing else (no dynamic exclusivity check on a class property).
///
/// It is `Sendable` only when `State` is: ``withLock(_:)`` hands the state to whichever thread calls
/// it, so a lock around a non-`Sendable` state must stay in one isolation domain. It is the one
/// unchecked box behind the module's locks; the types built on it are `Sendable` (or not) through
/// their stored properties.
///
/// Never call user code inside ``withLock(_:)``: compute what to do under the lock, act after.
@usableFromInline
final class Locked<State> {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let state: UnsafeMutablePointer<State>

    @usableFromInline
    init(_ initial: State) {
        let stateOffset = Self.stateOffset
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: stateOffset + MemoryLayout<State>.size,
            alignment: max(MemoryLayout<pthread_mutex_t>.alignment, MemoryLayout<State>.alignment)
        )
        mutex = raw.bindMemory(to: pthread_mutex_t.self, capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        state = (raw + stateOffset).bindMemory(to: State.self, capacity: 1)
        state.initialize(to: initial)
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    private static var stateOffset: Int {
        let size = MemoryLayout<pthread_mutex_t>.stride
        let alignment = MemoryLayout<State>.alignment
        return (size + alignment - 1) / alignment * alignment
    }

    deinit {
        pthread_mutex_destroy(mutex)
        state.deinitialize(count: 1)
        UnsafeMutableRawPointer(mutex).deallocate()
    }

    @inlinable
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }
}

// Sendable: the state is only touched between pthread_mutex_lock and pthread_mutex_unlock, and
// only a Sendable state may be handed from one thread to another through `withLock`.
extension Locked: @unchecked Sendable where State: Sendable {}
