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

    init(parsing value: JSONValue?) throws(BeaconError) {
        let reader = try ReplyReader(value, "status")
        software = try reader.string("software")
        pid = try reader.int("pid")
        uid = try reader.int("uid")
        startedUsec = try reader.int("startedUsec")
        address = try reader.string("address")
        store = try reader.string("store")
        clients = Int(try reader.int("clients"))
        subscriptions = Int(try reader.int("subscriptions"))
        properties = Int(try reader.int("properties"))
        version = try reader.int("version")
        sequence = try reader.int("sequence")
        lifecycle = reader.optionalString("lifecycle")
        bridge = (reader.members["bridge"]?.objectValue ?? [:]).compactMapValues(\.stringValue)
        if let error = reader.members["storeError"] {
            let store = try ReplyReader(error, "storeError")
            storeError = StoreError(reason: try store.string("reason"), sinceUsec: try store.int("sinceUsec"))
        }
        providers = []
        for entry in reader.members["providers"]?.arrayValue ?? [] {
            let state = try ReplyReader(entry, "provider state")
            providers.append(
                ProviderState(
                    subtrees: (state.members["subtrees"]?.arrayValue ?? []).compactMap(\.stringValue),
                    provider: state.optionalInt("provider"), pid: state.optionalInt("pid"),
                    command: state.optionalString("command"), isAvailable: state.bool("available", default: false),
                    reason: state.optionalString("reason"), sinceUsec: state.optionalInt("sinceUsec")))
        }
        if let value = reader.members["settings"] {
            let settings = try ReplyReader(value, "settings")
            var problems: [SettingsProblem] = []
            for entry in try settings.array("problems") { problems.append(try SettingsProblem(parsing: entry)) }
            self.settings = Settings(
                schemaFiles: Int(try settings.int("schemaFiles")),
                lockdownFiles: Int(try settings.int("lockdownFiles")),
                schemaKeys: Int(try settings.int("schemaKeys")), locks: Int(try settings.int("locks")),
                registrations: Int(try settings.int("registrations")), problems: problems)
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

    init(parsing value: JSONValue) throws(BeaconError) {
        let reader = try ReplyReader(value, "client")
        id = try reader.int("id")
        uid = try reader.int("uid")
        pid = try reader.int("pid")
        command = reader.optionalString("command")
        connectedUsec = try reader.int("connectedUsec")
        stream = reader.optionalString("stream")
        patterns = (reader.members["patterns"]?.arrayValue ?? []).compactMap(\.stringValue)
        queuedBytes = Int(reader.optionalInt("queuedBytes") ?? 0)
        ephemeral = Int(reader.optionalInt("ephemeral") ?? 0)
        suspensionBehavior = reader.optionalString("policy").flatMap(BeaconClient.SuspensionBehavior.init(rawValue:))
        followsSession = reader.bool("followsSession", default: false)
        isSuspended = reader.bool("suspended", default: false)
        suspensions = Int(reader.optionalInt("suspensions") ?? 0)
        held = Int(reader.optionalInt("held") ?? 0)
        dropped = Int(reader.optionalInt("dropped") ?? 0)
        object = reader.optionalString("object")
    }
}
