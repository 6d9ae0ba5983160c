import BeaconProtocol
import Logging
import NIOCore
import VarlinkServer

/// What a forwarded request asks, Set or Unset: io.beacon.Providers' `RequestMethod`, generated from the interface.
typealias RequestMethod = IOBeaconProviders.RequestMethod

/// The subtrees whose Sets and Unsets a client decides (`io.beacon.Providers`), and the requests forwarded to
/// their providers that wait for an answer.
final class ProviderRegistry {
    /// Whether a subtree was ever provided (it stays claimed, orphaned, when its provider goes): what every Set and
    /// Unset checks, a stored flag rather than the dictionaries below.
    var hasClaims = false
    /// Whether some provided subtree has no working provider, so that Get marks its values as possibly stale.
    var hasUnavailable = false

    /// A registered provider: its Provide call's connection, the roots of its subtrees, and whether it can reach
    /// where their values live.
    struct Provider {
        let client: BusClient
        let roots: [String]
        /// Set while the provider reports that it cannot carry out writes (SetAvailable).
        var unavailable: Unavailability?
        /// The keys published so far by a resync given in parts (Publish with `more`), until its last part.
        var resyncing: Set<String>?
        /// Registered unavailable (reading its source), and not available since: writes wait for it.
        var starting: Bool
        /// The providerVersion its last resync reflected (Publish's `providerVersion`): a key it did not name was
        /// absent then, so a change of that key no newer than this is older than what the daemon holds.
        var resyncVersion: Int64 = 0
    }

    /// Why writes of a subtree fail, and since when.
    struct Unavailability {
        var reason: String
        var sinceUsec: Int64
    }

    /// A Set or Unset for a provider, as it is sent (and sent again, unchanged, to the next provider when the one
    /// it went to disconnected before answering).
    struct Request {
        /// The connection that waits for the answer; `nil` when none does.
        let caller: BusClient?
        let method: RequestMethod
        let key: String
        let value: [UInt8]?
        /// The caller's `ifVersion`, which a VersionMismatch answer reports.
        let ifVersion: Int64?
        let ifProviderVersion: Int64?
        /// The caller asked for an ephemeral Set.
        let ephemeral: Bool
        let origin: Origin
        /// Names the write for as long as it lives, across providers: a provider that gets it again applies it at
        /// most once (beacon-fleet records it in etcd with the write).
        let write: String
        /// An ephemeral Set the daemon makes again for an owner still connected (``ProviderRegistry/ephemeral``).
        var restore = false
    }

    /// A request handed to a provider's connection, which the provider has not answered yet.
    struct Pending {
        let provider: Int
        let request: Request
    }

    /// A write that waits for its subtree's provider: one registering, or reading its source after registering.
    struct Waiting {
        enum Kind {
            /// A call not forwarded yet, by `owner`: it is checked (ifVersion) when it is.
            case call(
                method: RequestMethod, key: String, value: [UInt8]?, ifVersion: Int64?, ephemeral: Bool,
                owner: BusClient)
            /// A request sent to a provider that disconnected before answering: the provider may have carried it
            /// out, so it goes to the next one unchanged, which tells.
            case sent(Request)
        }

        let kind: Kind
        /// The connection that waits for the answer; `nil` when none does.
        let caller: BusClient?
        /// Uptime nanoseconds after which the caller is answered with an error.
        let deadline: NIODeadline

        var key: String {
            switch kind {
            case .call(_, let key, _, _, _, _): key
            case .sent(let request): request.key
            }
        }
    }

    /// By the connection id of their Provide call.
    var byConnection: [Int: Provider] = [:]
    /// Subtrees with no provider, with why: their provider went away, or the configuration expects one
    /// (`fleet.prefixes`). Their writes fail until a provider registers them.
    var orphans: [String: Unavailability] = [:]
    var requests: [Int64: Pending] = [:]
    /// The number of the next request, and what makes its write name unique across this daemon's restarts.
    private var requestNames = (next: Int64(1), instance: String(UInt64.random(in: 1...UInt64.max), radix: 36))
    /// Writes waiting for their provider (``WriteQueue``).
    var queue = WriteQueue()
    /// The bus; set once it is made.
    weak var host: (any ProvidersHost)?
    let logger: Logger

    /// Writes that wait for a provider.
    struct WriteQueue {
        /// Writes waiting for their provider, in the order of their calls.
        var waiting: [Waiting] = []
        /// Requests that no caller waits for (the Unsets of keys whose ephemeral owner went), kept for the next
        /// provider of their subtree however long it takes: a lease kept across a provider's restart would otherwise
        /// keep their keys.
        var unanswered: [Request] = []
        /// The timer that answers the first waiting write whose time is up; set only while some wait.
        var timer: Scheduled<Void>?
        /// How long a write waits for its subtree's provider (`fleet.requestTimeoutMs`).
        var limit: TimeAmount = .milliseconds(5000)
    }

    /// The providerVersion of each provided key's current value or deletion.
    var providerVersions: [String: Int64] = [:]
    /// The provided keys set as ephemeral.
    var ephemeral = ProvidedEphemerals()

    /// The provided keys each connection set as ephemeral, which go when it closes, and the value each was last set
    /// to: what the daemon sets again, create-only, when a provider's resync finds the key gone while its owner is
    /// still connected.
    struct ProvidedEphemerals {
        private(set) var keys: [Int: Set<String>] = [:]
        private(set) var values: [String: (owner: Int, value: [UInt8])] = [:]

        /// `owner` set `key` as ephemeral, to `value` (`nil`: an Unset).
        mutating func record(_ key: String, owner: Int, value: [UInt8]?) {
            keys[owner, default: []].insert(key)
            if let value { values[key] = (owner, value) }
        }

        /// `key` is no longer `owner`'s.
        mutating func forget(_ key: String, of owner: Int) {
            keys[owner]?.remove(key)
            if values[key]?.owner == owner { values.removeValue(forKey: key) }
        }

        /// `owner` closed: its keys, which it no longer owns.
        mutating func removeAll(of owner: Int) -> Set<String> {
            let owned = keys.removeValue(forKey: owner) ?? []
            for key in owned where values[key]?.owner == owner { values.removeValue(forKey: key) }
            return owned
        }
    }

    init(logger: Logger) {
        self.logger = logger
    }

    static func contains(_ root: String, _ key: String) -> Bool {
        key.utf8.count > root.utf8.count + 1 && key.hasPrefix(root)
            && key.utf8[key.utf8.index(key.utf8.startIndex, offsetBy: root.utf8.count)] == UInt8(ascii: ".")
    }

    static func overlap(_ a: String, _ b: String) -> Bool {
        a == b || contains(a, b) || contains(b, a)
    }

    /// Who decides the writes of a key.
    enum Claim {
        /// The provider registered on connection `id`.
        case provider(id: Int, Provider)
        /// Nobody: the subtree has no provider, for `reason`.
        case orphaned(reason: String)
    }

    /// Who decides the writes of `key`; `nil` for a key outside every provided subtree.
    func claim(of key: String) -> Claim? {
        for (id, provider) in byConnection where provider.roots.contains(where: { Self.contains($0, key) }) {
            return .provider(id: id, provider)
        }
        for (root, orphan) in orphans where Self.contains(root, key) {
            return .orphaned(reason: orphan.reason)
        }
        return nil
    }

    /// Whether a write of `key` would wait: its subtree has no provider, or one still reading its source.
    func waits(_ key: String) -> Bool {
        switch claim(of: key) {
        case nil: false
        case .orphaned?: true
        case .provider(_, let provider)?: provider.starting
        }
    }

    /// The provider that takes `key`'s writes now: one claims it, and is not reading its source.
    func readyProvider(of key: String) -> Int? {
        guard case .provider(let id, let provider)? = claim(of: key), !provider.starting else { return nil }
        return id
    }

    /// A number for a new request, and the write name it carries for as long as it lives.
    func newRequest() -> (number: Int64, write: String) {
        defer { requestNames.next += 1 }
        return (requestNames.next, "\(requestNames.instance)-\(requestNames.next)")
    }

    /// Why writes of `key` fail, when it lies in a subtree with no provider or with an unavailable one.
    func unavailability(of key: String) -> Unavailability? {
        for provider in byConnection.values where provider.roots.contains(where: { Self.contains($0, key) }) {
            return provider.unavailable
        }
        for (root, orphan) in orphans where Self.contains(root, key) { return orphan }
        return nil
    }

    /// Whether any provided subtree is without a working provider: what every Get checks.
    var anyUnavailable: Bool {
        !orphans.isEmpty || byConnection.values.contains { $0.unavailable != nil }
    }
}

extension BusError {
    static func providerUnavailable(_ key: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProviders.ProviderUnavailable.name,
            parameters: ["key": .string(key), "reason": .string(reason)])
    }

    static func outcomeUnknown(_ key: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProviders.OutcomeUnknown.name, parameters: ["key": .string(key), "reason": .string(reason)])
    }

    static func providerConflict(_ pattern: String) -> VarlinkError {
        VarlinkError(name: IOBeaconProviders.ProviderConflict.name, parameters: ["pattern": .string(pattern)])
    }

    static func notProvider(_ provider: Int64, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProviders.NotProvider.name,
            parameters: ["provider": .int(provider), "reason": .string(reason)])
    }
}

/// What the providers' service needs of the bus: the version of a key and the keys below a prefix, to store and
/// delete the values providers publish, a client by its connection, the limits, and the loop.
protocol ProvidersHost: AnyObject {
    var eventLoop: (any EventLoop)? { get }
    var limits: DaemonLimits { get }
    /// The bus's current version.
    var currentVersion: Int64 { get }
    /// The version of `key`'s value; `nil` when it has none.
    func version(of key: String) throws(VarlinkError) -> Int64?
    func keys(below prefix: PropertyKey) throws(VarlinkError) -> [PropertyKey]
    func client(_ id: Int) -> BusClient?
    /// Deletes `name`; returns the deletion's version, `nil` when it had no value.
    func delete(_ name: String, origin: Origin) throws(VarlinkError) -> Int64?
    /// Stores a value a provider published; returns its version, `nil` when the key held that value already.
    func storeProvided(_ key: PropertyKey, value: [UInt8], origin: Origin) throws(VarlinkError) -> Int64?
}
