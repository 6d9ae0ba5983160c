import Signals

extension RemoteProperty: LiveObservable {
    /// Observes the property and returns once its watch is live: the observer has had the current value (the
    /// first event), and every later change will reach it. Throws the first error of the property (a value that
    /// does not decode, a key the daemon refuses) or ``BeaconError/Code/cancelled``; nothing stays observed then.
    ///
    /// ```swift
    /// let binding = try await title.observeNextLive { label.text = $0 }
    /// ```
    @discardableResult
    public func observeLive(with observer: @escaping (Event<Value>) -> Void) async throws(BeaconError)
        -> any Disposable
    {
        let live = OneShot<BeaconError?>()
        let failures = errors.observeNext { live.fulfill($0) }
        let observation = observe { event in
            observer(event)
            // After the observer: when the caller resumes, the first value has been handled.
            live.fulfill(nil)
        }
        defer { failures.dispose() }
        try await live.awaitLive(disposingOnFailure: observation)
        return observation
    }

    /// Keeps the property watched until the returned disposable is disposed (or its owner's bag goes), and returns
    /// once the current value is known: from then on ``latestValue`` answers at once and follows every change,
    /// with no observer of its own.
    ///
    /// ```swift
    /// let theme = client.property("app.theme", as: String.self, default: "light")
    /// try await theme.keepLive().dispose(in: bag)
    /// render(theme.latestValue!)                      // no await, no nil
    /// ```
    ///
    /// Throws like ``observeLive(with:)``.
    public func keepLive() async throws(BeaconError) -> any Disposable {
        try await observeLive { _ in }
    }

    /// The current value: ``latestValue`` while the property is watched, else read from the daemon (a `Get`).
    public func current() async throws(BeaconError) -> Value {
        if let value = latestValue { return value }
        return try await load()
    }
}
