import BeaconProtocol
import Signals
import Synchronization

/// A Set or Unset of a provided key that the daemon forwards to its provider (`io.beacon.Providers`).
public struct ProviderRequest: Sendable, Hashable {
    public enum Method: String, Sendable, Hashable {
        case set = "Set"
        case unset = "Unset"
    }

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

    var json: JSONValue {
        var members: [String: JSONValue] = ["key": .string(key), "providerVersion": .int(providerVersion)]
        if let value { members["value"] = value }
        if let origin { members["origin"] = .object(origin) }
        return .object(members)
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
    static let answer = IOBeaconProviders.Answer.method
    static let publish = IOBeaconProviders.Publish.method
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
        var initial: [String: JSONValue] = ["patterns": .array(patterns.map { .string($0) })]
        if let unavailable { initial["unavailable"] = .string(unavailable) }
        let parameters = initial
        let task = Task {
            let current = ProviderNumber()
            let error = await runResubscribing(method: Method.provide, parameters: { parameters }) {
                (reply, first) throws(BeaconError) in
                let reader = ReplyReader(reply, "Provide reply")
                if first {
                    let provider = try reader.int("provider")
                    current.set((provider, Task { await registered(provider) }))
                    return .proceed
                }
                guard let (provider, registration) = current.get() else { return .proceed }
                for element in try reader.array("requests") {
                    let request = try ProviderRequest(parsing: element)
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
        var parameters: [String: JSONValue] = ["provider": .int(provider), "id": .int(request)]
        switch answer {
        case .change(let change):
            parameters["change"] = change.json
        case .error(let name, let errorParameters):
            parameters["error"] = .string(name)
            if !errorParameters.isEmpty { parameters["errorParameters"] = .object(errorParameters) }
        }
        _ = try await call(method: Method.answer, parameters: parameters)
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
        var parameters: [String: JSONValue] = [
            "provider": .int(provider), "changes": .array(changes.map(\.json)),
        ]
        if resync { parameters["resync"] = .bool(true) }
        if let providerVersion { parameters["providerVersion"] = .int(providerVersion) }
        if more { parameters["more"] = .bool(true) }
        let reply = try await call(method: Method.publish, parameters: parameters)
        return try ReplyReader(reply, "Publish reply").int("version")
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
    init(parsing element: JSONValue) throws(BeaconError) {
        guard case .object(let members) = element else {
            throw .invalidReply("a provider request is not an object")
        }
        let reader = ReplyReader(members, "provider request")
        guard let method = Method(rawValue: try reader.string("method")) else {
            throw .invalidReply("a provider request has an unknown method")
        }
        var origin: [String: JSONValue] = [:]
        if case .object(let fields)? = reader.value("origin") { origin = fields }
        self.init(
            id: try reader.int("id"), method: method, key: try reader.string("key"), value: reader.value("value"),
            ifProviderVersion: reader.optionalInt("ifProviderVersion"),
            ephemeral: reader.bool("ephemeral", default: false), answered: reader.bool("answered", default: true),
            origin: origin, write: reader.optionalString("write"), restore: reader.bool("restore", default: false))
    }
}

/// The provider number of the current registration, and the task that runs its `registered` call, which its
/// requests wait for.
private final class ProviderNumber: Sendable {
    private let state = Mutex<(provider: Int64, registration: Task<Void, Never>)?>(nil)

    func set(_ current: (provider: Int64, registration: Task<Void, Never>)) { state.withLock { $0 = current } }
    func get() -> (provider: Int64, registration: Task<Void, Never>)? { state.withLock { $0 } }
}
