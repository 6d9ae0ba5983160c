import BeaconProtocol
import Signals
import Synchronization

/// A Set or Unset of a provided key that the daemon forwards to its provider (`io.beacon.Providers`).
public struct ProviderRequest: Sendable, Hashable {
    /// `set` or `unset`: io.beacon.Providers' `RequestMethod`, generated from the interface.
    public typealias Method = IOBeaconProviders.RequestMethod

    /// The number the answer names.
    public var id: Int64
    public var method: Method
    public var key: String
    /// The value of a Set.
    public var value: JSONValue?
    /// Present when the caller gave `ifVersion`: the provider version of the key's current value, 0 when it has
    /// none. The provider decides the compare-and-set with it.
    public var ifProviderVersion: Int64?
    /// The caller asked for an ephemeral Set.
    public var ephemeral: Bool
    /// False for an Unset that no caller waits for (its ephemeral owner went away).
    public var answered: Bool
    /// The caller's credentials: `uid`, `pid`, `command`.
    public var origin: [String: JSONValue]
    /// Names the write for as long as it lives: a request the daemon sends again (to the next provider, after the
    /// one it went to disconnected without answering) has the same `write`, and is to be applied at most once.
    /// `nil` from a daemon that does not name its writes.
    public var write: String?
    /// An ephemeral Set the daemon makes again, with no caller, for an owner still connected after the key was lost
    /// (its lease expired while no provider ran): create the key only if it is absent (`ifProviderVersion` 0).
    public var restore: Bool = false
}

/// A change of a provided key, as a provider publishes it.
public struct ProvidedChange: Sendable, Hashable {
    public var key: String
    /// The new value; `nil` for a deletion.
    public var value: JSONValue?
    /// The provider's own version of the change (for beacon-fleet, the etcd revision that made it).
    public var providerVersion: Int64
    /// Where the change was made (`uid`, `pid`, `command`, `machine`); the provider's own credentials when `nil`.
    public var origin: [String: JSONValue]?

    public init(key: String, value: JSONValue?, providerVersion: Int64, origin: [String: JSONValue]? = nil) {
        self.key = key
        self.value = value
        self.providerVersion = providerVersion
        self.origin = origin
    }

    /// The change as `io.beacon.Providers` declares it. The origin's members are read as the daemon reads them:
    /// a missing or mistyped `uid` or `pid` is 0, and members the interface does not declare are left out.
    var generated: IOBeaconProviders.Change {
        IOBeaconProviders.Change(
            key: key, value: value, providerVersion: Int(providerVersion),
            origin: origin.map { members in
                IOBeaconProviders.Origin(
                    uid: Int(members["uid"]?.intValue ?? 0), pid: Int(members["pid"]?.intValue ?? 0),
                    command: members["command"]?.stringValue, machine: members["machine"]?.stringValue)
            })
    }
}

/// How a provider answers a ``ProviderRequest``.
public enum ProviderAnswer: Sendable, Hashable {
    /// The request was carried out: the change it made, which the daemon applies before answering the caller.
    case change(ProvidedChange)
    /// The request failed: the caller gets this error (a qualified name) with its parameters.
    case error(String, [String: JSONValue] = [:])
}

extension Method {
    static let provide = IOBeaconProviders.Provide.method
}

extension BeaconClient {
    /// Registers as the provider of `patterns` (each a key followed by `.**`) and serves the daemon's requests
    /// until the returned disposable is disposed, registering again after a reconnection. `registered` is called
    /// with the provider number on each registration, before any request of it: publish the subtree there
    /// with `resync: true`. Each request is handled in its own task, and its answer is sent with
    /// ``answer(provider:request:with:)``; a request nobody waits for (``ProviderRequest/answered`` false) is
    /// answered too, and the daemon ignores the answer's absence of a caller. With `unavailable`, the subtrees
    /// start unavailable for that reason until ``setAvailable(provider:_:reason:)`` says otherwise: for a provider
    /// that must first read its source, so that nobody reads the subtrees before it has published them.
    public func provide(
        _ patterns: [String],
        unavailable: String? = nil,
        registered: @escaping @Sendable (_ provider: Int64) async -> Void,
        handle: @escaping @Sendable (_ provider: Int64, _ request: ProviderRequest) async -> ProviderAnswer
    ) -> any Disposable {
        let parameters = IOBeaconProviders.Provide.Parameters(patterns: patterns, unavailable: unavailable)
            .varlinkMembers
        let task = Task {
            let current = ProviderNumber()
            let error = await runResubscribing(method: Method.provide, parameters: { parameters }) {
                (members, first) throws(BeaconError) in
                let reply: IOBeaconProviders.Provide.Reply
                do {
                    reply = try IOBeaconProviders.Provide.Reply(varlinkMembers: members, path: "Provide reply")
                } catch {
                    throw .invalidReply("a Provide reply is not what its interface declares: \(error)", cause: error)
                }
                if first {
                    guard let number = reply.provider else {
                        throw .invalidReply("the first Provide reply carries no provider number")
                    }
                    let provider = Int64(number)
                    current.set((provider, Task { await registered(provider) }))
                    return .proceed
                }
                guard let (provider, registration) = current.get() else { return .proceed }
                for request in reply.requests.map(ProviderRequest.init) {
                    Task {
                        await registration.value
                        let answer = await handle(provider, request)
                        // A request nobody waits for is answered too: until it is, the daemon keeps it, and sends
                        // it again to the next provider.
                        do throws(BeaconError) {
                            try await self.answer(provider: provider, request: request.id, with: answer)
                        } catch {
                            self.report(error)
                        }
                    }
                }
                return .proceed
            }
            if let error, error.code != .clientClosed { report(error) }
        }
        return BlockDisposable { task.cancel() }
    }

    /// Answers request `request` of `provider`.
    public func answer(provider: Int64, request: Int64, with answer: ProviderAnswer) async throws(BeaconError) {
        let providers = IOBeaconProviders.Client(calls)
        _ = try await typed {
            switch answer {
            case .change(let change):
                try await providers.answer(provider: Int(provider), id: Int(request), change: change.generated)
            case .error(let name, let parameters):
                try await providers.answer(
                    provider: Int(provider), id: Int(request), error: name,
                    errorParameters: parameters.isEmpty ? nil : .object(parameters))
            }
        }
    }

    /// Applies `changes` of `provider`'s keys, in order; with `resync`, the other keys of its subtrees are
    /// deleted. A resync too large for one message is published in parts, each with `resync` and all but the last
    /// with `more`: the keys that no part named are deleted after the last. With a resync, `providerVersion` is the
    /// version the whole resync reflects: a later change or answer of a key it did not name is ignored unless it is
    /// newer. Returns the daemon's version after them.
    @discardableResult
    public func publish(
        provider: Int64, changes: [ProvidedChange], resync: Bool = false, more: Bool = false,
        providerVersion: Int64? = nil
    ) async throws(BeaconError) -> Int64 {
        let reply = try await typed {
            try await IOBeaconProviders.Client(calls).publish(
                provider: Int(provider), changes: changes.map(\.generated), resync: resync ? true : nil,
                more: more ? true : nil, providerVersion: providerVersion.map { Int($0) })
        }
        return Int64(reply.version)
    }
}

extension BeaconClient {
    /// Reports whether `provider` can carry out writes. While it cannot, the daemon fails writes of its subtrees
    /// at once with ``BeaconError/Code/providerUnavailable`` and `reason`, and reads say that values may be stale.
    public func setAvailable(provider: Int64, _ available: Bool, reason: String? = nil) async throws(BeaconError) {
        _ = try await typed {
            try await IOBeaconProviders.Client(calls).setAvailable(
                provider: Int(provider), available: available, reason: reason)
        }
    }
}

extension ProviderRequest {
    /// A Provide reply's request, as `io.beacon.Providers` declares it.
    init(_ request: IOBeaconProviders.Request) {
        var origin: [String: JSONValue] = [
            "uid": .int(Int64(request.origin.uid)), "pid": .int(Int64(request.origin.pid)),
        ]
        if let command = request.origin.command { origin["command"] = .string(command) }
        if let machine = request.origin.machine { origin["machine"] = .string(machine) }
        self.init(
            id: Int64(request.id), method: request.method, key: request.key, value: request.value,
            ifProviderVersion: request.ifProviderVersion.map { Int64($0) }, ephemeral: request.ephemeral ?? false,
            answered: request.answered, origin: origin, write: request.write, restore: request.restore ?? false)
    }
}

/// The provider number of the current registration, and the task that runs its `registered` call, which its
/// requests wait for.
private final class ProviderNumber: Sendable {
    private let state = Mutex<(provider: Int64, registration: Task<Void, Never>)?>(nil)

    func set(_ current: (provider: Int64, registration: Task<Void, Never>)) { state.withLock { $0 = current } }
    func get() -> (provider: Int64, registration: Task<Void, Never>)? { state.withLock { $0 } }
}
