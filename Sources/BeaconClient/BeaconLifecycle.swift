import BeaconProtocol
import Signals

/// The session's lifecycle as the daemon bridges it from logind: notifications as signals and the state as a
/// remote property.
///
/// ```swift
/// client.lifecycle.didBecomeActive ~> { viewModel.refresh() }
/// client.lifecycle.willResignActive.observeNext { reason in if reason == .locked { save() } }
/// ```
///
/// Each signal observation runs its own `Observe` stream (see ``BeaconClient/notifications(_:)``).
public struct BeaconLifecycle: Sendable {
    let client: BeaconClient

    /// `lifecycle.didBecomeActive`: the session became active, unlocked and awake.
    public var didBecomeActive: RemoteSignal<Void> { events("lifecycle.didBecomeActive").map { _ in } }

    /// Why the session is about to become inactive.
    public enum ResignReason: String, Sendable, Hashable, CaseIterable, Codable {
        /// The screen was locked.
        case locked
        /// The machine is about to suspend.
        case sleep
        /// Another session took the seat (a user switch), or the session was deactivated.
        case sessionInactive
        /// The machine is shutting down.
        case shutdown
    }

    /// `lifecycle.state`: whether the session is active, unlocked, awake and not shutting down.
    public enum State: String, Sendable, Hashable, CaseIterable, Codable {
        case active
        case inactive
    }

    /// `lifecycle.willResignActive`, with its reason. A notification whose reason this version does not know is
    /// not delivered (the interface's set of reasons is closed).
    public var willResignActive: RemoteSignal<ResignReason> {
        events("lifecycle.willResignActive").compactMap { note in
            note.userInfo?["reason"]?.stringValue.flatMap(ResignReason.init(rawValue:))
        }
    }

    /// `lifecycle.willSleep`: the machine is about to suspend.
    public var willSleep: RemoteSignal<Void> { events("lifecycle.willSleep").map { _ in } }

    /// `lifecycle.didWake`: the machine resumed.
    public var didWake: RemoteSignal<Void> { events("lifecycle.didWake").map { _ in } }

    /// `lifecycle.willTerminate`: the machine is shutting down.
    public var willTerminate: RemoteSignal<Void> { events("lifecycle.willTerminate").map { _ in } }

    /// Every `lifecycle.*` notification, with its `userInfo`.
    public var all: RemoteSignal<BeaconNotification> { events("lifecycle.*") }

    /// `lifecycle.state`; `nil` while the daemon has not set it.
    public var state: RemoteProperty<State?> { client.property("lifecycle.state", as: State.self) }

    /// Whether the session is active (``state`` is ``State/active``).
    public var isActive: Signal<Bool> { state.map { $0 == .active }.removeDuplicates() }

    /// Never suspended: the lifecycle is what an app needs to hear while the rest of its delivery waits.
    private func events(_ pattern: String) -> RemoteSignal<BeaconNotification> {
        client.notifications(NotificationObservation(patterns: [pattern], behavior: .deliverImmediately))
    }
}

extension BeaconClient {
    /// The session lifecycle: `client.lifecycle.didBecomeActive ~> { ... }`.
    public var lifecycle: BeaconLifecycle { BeaconLifecycle(client: self) }
}

/// The lifecycle as the daemon last read it from logind: `io.beacon.Lifecycle.State`.
public struct LifecycleStatus: Sendable, Hashable {
    /// Whether the session is active; `nil` until the bridge has read logind once.
    public var state: BeaconLifecycle.State?
    public var sessionActive: Bool?
    public var sessionLocked: Bool?
    public var sessionIdle: Bool?
    public var systemSleeping: Bool?
    public var systemShuttingDown: Bool?
    /// The bridge to logind, as in ``DaemonStatus/lifecycle``: `connected: PATH`, `disconnected: REASON`, ...
    public var bridge: String
    /// Whether the daemon holds its logind delay inhibitor for sleep now.
    public var holdsSleepInhibitor: Bool
    /// Connections taking part in sleep (``BeaconLifecycle/holdSleep(description:_:)``).
    public var participants: Int
    /// The sleep being prepared and the participants that have not released it yet; `nil` when none is.
    public var preparingSleep: Int64?
    public var pendingParticipants: Int?

    init(_ reply: IOBeaconLifecycle.State.Reply) {
        state = reply.state.flatMap(BeaconLifecycle.State.init(rawValue:))
        sessionActive = reply.sessionActive
        sessionLocked = reply.sessionLocked
        sessionIdle = reply.sessionIdle
        systemSleeping = reply.systemSleeping
        systemShuttingDown = reply.systemShuttingDown
        bridge = reply.bridge
        holdsSleepInhibitor = reply.sleepInhibitor
        participants = reply.participants
        preparingSleep = reply.sleep.map(Int64.init)
        pendingParticipants = reply.pending
    }
}

extension BeaconLifecycle {
    /// The lifecycle now, as the daemon last read it from logind. Throws the error named
    /// `io.beacon.Lifecycle.Unavailable` (``BeaconError/name``) when the daemon does not follow it.
    public func status() async throws(BeaconError) -> LifecycleStatus {
        LifecycleStatus(try await client.typed { try await IOBeaconLifecycle.Client(client.calls).state() })
    }
}

/// One sleep the daemon announced to a sleep participant.
public struct SleepPreparation: Sendable, Hashable {
    /// The daemon's number of this sleep.
    public var sleep: Int64
    /// How long the participant may take before the machine suspends anyway.
    public var timeout: Duration
}

extension BeaconLifecycle {
    /// Takes part in sleep: before the machine suspends, `prepare` runs, and the daemon holds logind's sleep
    /// inhibitor until it returns (at most ``SleepPreparation/timeout``, which logind's `InhibitDelayMaxSec` caps).
    ///
    /// ```swift
    /// let participation = client.lifecycle.holdSleep { _ in await store.flush() }
    /// ```
    ///
    /// The participation is renewed after a reconnection and ends when the returned disposable is disposed or the
    /// client closes. A daemon that does not follow the lifecycle (`io.beacon.Lifecycle.Unavailable`) is
    /// reported on ``BeaconClient/errors``.
    public func holdSleep(
        description: String? = nil,
        _ prepare: @escaping @Sendable (SleepPreparation) async -> Void
    ) -> any Disposable {
        let client = self.client
        let parameters: [String: JSONValue] = description.map { ["description": .string($0)] } ?? [:]
        let task = Task {
            let error = await client.runResubscribing(method: Method.holdSleep, parameters: { parameters }) {
                (reply, _) throws(BeaconError) in
                let reader = ReplyReader(reply, "HoldSleep reply")
                guard try reader.string("event") == "willSleep" else { return .proceed }
                let participant = try reader.int("participant")
                let sleep = try reader.int("sleep")
                let timeout = Duration.microseconds(reader.optionalInt("timeoutUsec") ?? 0)
                Task {
                    await prepare(SleepPreparation(sleep: sleep, timeout: timeout))
                    do throws(BeaconError) {
                        _ = try await client.call(
                            method: Method.releaseSleep,
                            parameters: ["participant": .int(participant), "sleep": .int(sleep)]
                        )
                    } catch {
                        client.report(error)
                    }
                }
                return .proceed
            }
            if let error, error.code != .clientClosed { client.report(error) }
        }
        return BlockDisposable { task.cancel() }
    }
}
