/// A disposable made of several others, disposed together.
///
/// Unlike ``DisposeBag`` it does not dispose anything when it is deallocated: dropping the handle
/// of an observation does not end it. Disposables added after ``dispose()`` are disposed at once.
///
/// Threads: every method may be called from any thread; the parts are disposed after the internal
/// lock is released.
public final class CompositeDisposable: Disposable {
    // Nil means disposed.
    private let items: Locked<[any Disposable]?>

    public init(_ disposables: [any Disposable] = []) {
        items = Locked(disposables)
    }

    public var isDisposed: Bool { items.withLock { $0 == nil } }

    /// Adds `disposable`; disposes it at once if this composite is already disposed.
    public func add(_ disposable: any Disposable) {
        let added = items.withLock { items -> Bool in
            guard items != nil else { return false }
            items!.append(disposable)
            return true
        }
        if !added { disposable.dispose() }
    }

    public func dispose() {
        let taken = items.withLock { items -> [any Disposable]? in
            defer { items = nil }
            return items
        }
        for item in taken ?? [] { item.dispose() }
    }
}

/// Adds `disposable` to `composite`.
public func += (composite: CompositeDisposable, disposable: any Disposable) {
    composite.add(disposable)
}

/// A disposable that holds one inner disposable at a time: setting a new one disposes the previous.
///
/// Once disposed, it disposes the current inner disposable and every later one at once.
public final class SerialDisposable: Disposable {
    private struct State {
        var inner: (any Disposable)?
        var disposed = false
    }
    private let state = Locked(State())

    public init() {}

    public var isDisposed: Bool { state.withLock { $0.disposed } }

    /// The current inner disposable. Setting it disposes the previous one (after the lock is released).
    public var inner: (any Disposable)? {
        get { state.withLock { $0.inner } }
        set {
            let (old, disposeNew) = state.withLock { state -> ((any Disposable)?, Bool) in
                if state.disposed { return (nil, true) }
                defer { state.inner = newValue }
                return (state.inner, false)
            }
            old?.dispose()
            if disposeNew { newValue?.dispose() }
        }
    }

    public func dispose() {
        let old = state.withLock { state -> (any Disposable)? in
            state.disposed = true
            defer { state.inner = nil }
            return state.inner
        }
        old?.dispose()
    }
}
