import BeaconProtocol

/// The daemon's state, as `io.beacon.Daemon.Status` reports it.
public struct DaemonStatus: Sendable, Hashable {
    /// Why the store fails to take writes, and since when.
    public struct StoreError: Sendable, Hashable {
        public var reason: String
        public var sinceUsec: Int64
    }

    /// A part of a schema or lockdown file that the daemon skipped.
    public struct SettingsProblem: Sendable, Hashable {
        public var file: String
        public var line: Int
        public var problem: String
    }

    /// The schemas and lockdown rules in force.
    public struct Settings: Sendable, Hashable {
        public var schemaFiles: Int
        public var lockdownFiles: Int
        public var schemaKeys: Int
        public var locks: Int
        public var registrations: Int
        public var problems: [SettingsProblem]
    }

    /// A provided subtree (`io.beacon.Providers`), or one the configuration's `fleet.prefixes` expects.
    public struct ProviderState: Sendable, Hashable {
        /// The patterns, such as `fleet.**`.
        public var subtrees: [String]
        /// The provider's number, process id and command; `nil` when no provider is registered.
        public var provider: Int64?
        public var pid: Int64?
        public var command: String?
        /// Whether writes of the subtrees work; when not, why and since when.
        public var isAvailable: Bool
        public var reason: String?
        public var sinceUsec: Int64?
    }

    /// The daemon's software version.
    public var software: String
    public var pid: Int64
    public var uid: Int64
    public var startedUsec: Int64
    /// Where the daemon listens, e.g. `unix:/run/user/1000/beacon.sock`.
    public var address: String
    /// The SQLite store's path.
    public var store: String
    public var clients: Int
    public var subscriptions: Int
    public var properties: Int
    public var version: Int64
    public var sequence: Int64
    /// The lifecycle bridge: `connected: PATH`, `disconnected: REASON`, `no session: REASON`, `starting` or
    /// `disabled`.
    public var lifecycle: String?
    /// Each bus of the D-Bus bridge and its state.
    public var bridge: [String: String]
    public var storeError: StoreError?
    public var settings: Settings?
    public var providers: [ProviderState]

    init(_ status: IOBeaconDaemon.DaemonStatus) {
        software = status.software
        pid = Int64(status.pid)
        uid = Int64(status.uid)
        startedUsec = Int64(status.startedUsec)
        address = status.address
        store = status.store
        clients = status.clients
        subscriptions = status.subscriptions
        properties = status.properties
        version = Int64(status.version)
        sequence = Int64(status.sequence)
        lifecycle = status.lifecycle
        bridge = status.bridge ?? [:]
        storeError = status.storeError.map { StoreError(reason: $0.reason, sinceUsec: Int64($0.sinceUsec)) }
        providers = (status.providers ?? []).map { state in
            ProviderState(
                subtrees: state.subtrees, provider: state.provider.map(Int64.init), pid: state.pid.map(Int64.init),
                command: state.command, isAvailable: state.available, reason: state.reason,
                sinceUsec: state.sinceUsec.map(Int64.init))
        }
        settings = status.settings.map { settings in
            Settings(
                schemaFiles: settings.schemaFiles, lockdownFiles: settings.lockdownFiles,
                schemaKeys: settings.schemaKeys, locks: settings.locks, registrations: settings.registrations,
                problems: settings.problems.map { SettingsProblem(file: $0.file, line: $0.line, problem: $0.problem) })
        }
    }
}

/// One connection to the daemon, as `io.beacon.Daemon.Clients` reports it.
public struct DaemonClient: Sendable, Hashable {
    /// The connection's number, unique for the daemon's lifetime.
    public var id: Int64
    public var uid: Int64
    public var pid: Int64
    public var command: String?
    public var connectedUsec: Int64
    /// The streamed method running on the connection, e.g. `io.beacon.Properties.Watch`.
    public var stream: String?
    public var patterns: [String]
    /// Bytes written to the connection and not yet read by the client.
    public var queuedBytes: Int
    /// Ephemeral properties the connection owns.
    public var ephemeral: Int
    /// The stream's behaviour while suspended.
    public var suspensionBehavior: BeaconClient.SuspensionBehavior?
    /// Whether the session's activity suspends the stream.
    public var followsSession: Bool
    /// Whether the stream's delivery is suspended now, and the Suspend calls pending on the connection.
    public var isSuspended: Bool
    public var suspensions: Int
    /// Events kept while suspended, and events dropped.
    public var held: Int
    public var dropped: Int
    /// The object an Observe asked for.
    public var object: String?

    init(_ client: IOBeaconDaemon.Client) {
        id = Int64(client.id)
        uid = Int64(client.uid)
        pid = Int64(client.pid)
        command = client.command
        connectedUsec = Int64(client.connectedUsec)
        stream = client.stream
        patterns = client.patterns
        queuedBytes = client.queuedBytes
        ephemeral = client.ephemeral
        suspensionBehavior = client.policy.flatMap(BeaconClient.SuspensionBehavior.init(rawValue:))
        followsSession = client.followsSession ?? false
        isSuspended = client.suspended ?? false
        suspensions = client.suspensions
        held = client.held ?? 0
        dropped = client.dropped ?? 0
        object = client.object
    }
}
