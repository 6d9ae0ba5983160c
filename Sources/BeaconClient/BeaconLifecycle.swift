import Signals

/// The session's lifecycle as the daemon bridges it from logind: notifications as signals and the state as a
/// remote property.
///
/// ```swift
/// client.lifecycle.didBecomeActive ~> { viewModel.refresh() }
/// client.lifecycle.willResignActive.observeNext { reason in save(reason) }
/// ```
///
/// Each signal observation runs its own `Observe` stream (see ``BeaconClient/notifications(_:)``).
public struct BeaconLifecycle: Sendable {
    let client: BeaconClient

    /// `lifecycle.didBecomeActive`: the session became active, unlocked and awake.
    public var didBecomeActive: Signal<Void> { events("lifecycle.didBecomeActive").eraseValues() }

    /// `lifecycle.willResignActive`, with the reason the daemon gives (`locked`, `sleep`, `sessionInactive`,
    /// `shutdown`; empty when it gives none).
    public var willResignActive: Signal<String> {
        events("lifecycle.willResignActive").map { $0.userInfo?["reason"]?.stringValue ?? "" }
    }

    /// `lifecycle.willSleep`: the machine is about to suspend.
    public var willSleep: Signal<Void> { events("lifecycle.willSleep").eraseValues() }

    /// `lifecycle.didWake`: the machine resumed.
    public var didWake: Signal<Void> { events("lifecycle.didWake").eraseValues() }

    /// `lifecycle.willTerminate`: the machine is shutting down.
    public var willTerminate: Signal<Void> { events("lifecycle.willTerminate").eraseValues() }

    /// Every `lifecycle.*` notification, with its `userInfo`.
    public var all: Signal<BeaconNotification> { client.notifications("lifecycle.*") }

    /// `lifecycle.state`: `"active"` or `"inactive"`; `nil` while the daemon has not set it.
    public var state: RemoteProperty<String?> { client.property("lifecycle.state", as: String.self) }

    /// Whether the session is active (`lifecycle.state` is `"active"`).
    public var isActive: Signal<Bool> { state.map { $0 == "active" }.removeDuplicates() }

    private func events(_ name: String) -> Signal<BeaconNotification> {
        client.notifications(name)
    }
}

extension BeaconClient {
    /// The session lifecycle: `client.lifecycle.didBecomeActive ~> { ... }`.
    public var lifecycle: BeaconLifecycle { BeaconLifecycle(client: self) }
}
