import Synchronization

/// A handle that ends an observation or releases a resource.
///
/// Calling ``dispose()`` more than once has no further effect. Once `dispose()` has returned,
/// the observer it belongs to is not called again by a delivery that starts afterwards.
public protocol Disposable: AnyObject, Sendable {
    /// Ends the observation. Safe to call from any thread, any number of times.
    func dispose()
    /// Whether ``dispose()`` has been called.
    var isDisposed: Bool { get }
}

extension Disposable {
    /// Adds this disposable to `bag`, so that it is disposed together with the bag.
    public func dispose(in bag: DisposeBag) {
        bag.add(self)
    }
}

/// A disposable that runs a closure once, the first time it is disposed.
///
/// Threads: ``dispose()`` may race from several threads; exactly one runs the closure, on its own
/// thread, after the internal lock is released. Lifetime: the closure is released once it has run.
public final class BlockDisposable: Disposable {
    // The closure is only read and cleared under `lock`, and run after the lock is released.
    private let lock: Locked<UncheckedSendable<() -> Void>?>
    private let disposed = Atomic<Bool>(false)

    public init(_ action: @escaping () -> Void) {
        lock = Locked(UncheckedSendable(action))
    }

    public var isDisposed: Bool { disposed.load(ordering: .acquiring) }

    public func dispose() {
        guard !disposed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let action = lock.withLock { state -> UncheckedSendable<() -> Void>? in
            defer { state = nil }
            return state
        }
        action?.value()
    }
}

/// A disposable that does nothing, for signals that hold no resources. Shared and thread-safe.
public final class NonDisposable: Disposable {
    public static let instance = NonDisposable()
    private init() {}
    public func dispose() {}
    public var isDisposed: Bool { false }
}

/// A collection of disposables that are disposed together: when ``dispose()`` is called, or when
/// the bag itself is deallocated.
///
/// A disposable added to a bag that is already disposed is disposed at once.
///
/// Threads: every method may be called from any thread; contents are disposed after the bag's lock
/// is released, in the order they were added. Lifetime: the bag holds its contents strongly and
/// drops handles that were disposed elsewhere as it grows, so a long-lived bag does not leak.
public final class DisposeBag: Disposable {
    private struct State {
        var items: [any Disposable] = []
        var disposed = false
    }
    private let state = Mutex(State())

    public init() {}

    public var isDisposed: Bool { state.withLock { $0.disposed } }

    /// Adds `disposable` to the bag; disposes it at once if the bag is already disposed.
    public func add(_ disposable: any Disposable) {
        let alreadyDisposed = state.withLock { state -> Bool in
            if state.disposed { return true }
            // Drop handles that ended on their own so a long-lived bag does not grow forever.
            if state.items.count >= 32 && state.items.count.isMultiple(of: 32) {
                state.items.removeAll { $0.isDisposed }
            }
            state.items.append(disposable)
            return false
        }
        if alreadyDisposed { disposable.dispose() }
    }

    /// Adds several disposables.
    public func add(_ disposables: [any Disposable]) {
        for disposable in disposables { add(disposable) }
    }

    /// Disposes every disposable in the bag. Later additions are disposed at once.
    public func dispose() {
        let items = state.withLock { state -> [any Disposable] in
            state.disposed = true
            defer { state.items = [] }
            return state.items
        }
        for item in items { item.dispose() }
    }

    deinit {
        dispose()
    }
}

/// Adds `disposable` to `bag`.
public func += (bag: DisposeBag, disposable: any Disposable) {
    bag.add(disposable)
}
