extension Property {
    /// Keeps this property and `other` equal: `other` first takes this property's value, then a
    /// change of either is set on the other.
    ///
    /// No feedback loop: while a change made on one thread is being copied to the other property,
    /// the copy back is suppressed on that thread (and only for that binding). Both properties are
    /// held weakly; the binding ends when either is deallocated or the returned disposable is
    /// disposed.
    @discardableResult
    public func bidirectionalBind(to other: Property<Value>) -> any Disposable {
        let propagating = Locked<[UInt]>([])
        let propagate = { (body: () -> Void) in
            let thread = currentThreadID()
            let entered = propagating.withLock { threads -> Bool in
                if threads.contains(thread) { return false }
                threads.append(thread)
                return true
            }
            guard entered else { return }
            body()
            propagating.withLock { threads in
                if let index = threads.firstIndex(of: thread) { threads.remove(at: index) }
            }
        }
        let binding = CompositeDisposable()
        binding += observeNext { [weak other] value in
            propagate { other?.set(value) }
        }
        binding += other.dropFirst().observeNext { [weak self] value in
            propagate { self?.set(value) }
        }
        bag.add(binding)
        other.bag.add(binding)
        return binding
    }
}
