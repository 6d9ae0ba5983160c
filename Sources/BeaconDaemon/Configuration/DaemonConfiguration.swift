import BeaconConfiguration
import BeaconProtocol
import BeaconSystemd
import Logging

/// Everything `beacond` is configured with.
///
/// Sources, strongest first: command-line flags (`--limits-max-value-size 1024`), `BEACON_*` environment variables
/// (`BEACON_LIMITS_MAX_VALUE_SIZE=1024`), the JSON configuration file, and the defaults built in here. The file is
/// `--config PATH` (or `BEACON_CONFIG`), else `$XDG_CONFIG_HOME/beacon/beacond.json` when it exists; `config/beacond.json`
/// in the source tree documents every key with its default.
public struct DaemonConfiguration: Sendable {
    /// Where clients connect: `unix:PATH`.
    public var address: String
    /// `store.*`.
    public var store: StoreSettings
    public var limits: DaemonLimits
    /// Uids besides the daemon's own whose connections are served.
    public var allowedUIDs: [UInt32]
    public var logLevel: Logger.Level
    /// The bridge to logind (`lifecycle.*`).
    public var lifecycle: LifecycleSettings
    /// Schemas and lockdown files.
    public var settings: SettingsPaths
    /// The declarative D-Bus bridge (`beacon/bridge.json` in the data directories, then the configuration file's
    /// `bridge` section); read at start-up only.
    public var bridge: [DBusMapping]
    /// What the daemon makes of the bridged values (an entry's `map`, `names`, `quietMs`...), by target.
    var bridgeTransforms: [DBusMapping.Target: BridgeTransform] = [:]
    /// `fleet.*`.
    public var fleet: FleetSettings
    /// The configuration file that was read, if any.
    public var configFile: String?

    /// The store's settings (`store.*`).
    public struct StoreSettings: Sendable {
        /// The SQLite store.
        public var path: String
        /// SQLite's `synchronous` setting: `normal` survives a crash of the daemon, `full` also a power loss.
        public var synchronous: String
        /// How many deletions are remembered for `since` replays; older ones make a reconnecting watcher resync.
        public var historyLimit: Int
        /// `store.checkAtStartMaxBytes`: a store up to this size has its integrity checked before the daemon
        /// serves; a larger one right after, beside the serving.
        public var checkAtStartMaxBytes: Int
    }

    /// The subtrees beacon-fleet provides (`fleet.*`), read at start-up only.
    public struct FleetSettings: Sendable {
        /// `fleet.prefixes`: the roots of the subtrees beacon-fleet mirrors to etcd (`fleet` for `fleet.**`). Until
        /// a provider registers them, their writes fail with `io.beacon.Providers.ProviderUnavailable` instead of
        /// being stored here only.
        public var prefixes: [String]
        /// `fleet.requestTimeoutMs`: how long a write of a provided subtree waits for its provider to register or
        /// to finish reading its source, and for a disconnected provider's successor to answer the writes it had
        /// been sent.
        public var requestTimeoutMs: Int
    }

    /// The socket path inside ``address``.
    public var socketPath: String? {
        address.hasPrefix("unix:") ? String(address.dropFirst(5)) : nil
    }

    /// Every key beacond reads, and so every flag it takes (`--limits-max-value-size` for `limits.maxValueSize`).
    /// The `bridge` section is read from the file only.
    public static let keys = [
        "address", "store.path", "store.synchronous", "store.historyLimit", "store.checkAtStartMaxBytes",
        "access.allowedUids", "log.level",
        "fleet.prefixes", "fleet.requestTimeoutMs", "limits.maxMessageSize", "limits.maxJsonDepth",
        "limits.maxKeyLength", "limits.maxKeyDepth", "limits.maxValueSize", "limits.maxPatterns",
        "limits.maxQueuedBytes", "limits.maxConnectionsPerUid", "limits.maxBytesPerUid", "limits.frameTimeoutMs",
        "limits.slowSubscriber", "lifecycle.enabled", "lifecycle.sessionId", "lifecycle.sleepInhibitor",
        "lifecycle.sleepTimeoutMs", "lifecycle.reconnectMs", "settings.schemaDirs", "settings.lockdownDir",
        "settings.watch",
    ]

    /// Reads the configuration from flags, environment and file.
    public static func load(
        arguments: [String] = CommandLine.arguments,
        environment: [String: String] = POSIX.environment()
    ) async throws -> DaemonConfiguration {
        let (reader, file) = try ConfigurationReader.load(arguments: arguments, environment: environment)
        try reader.checkFlags(knownKeys: keys)
        let configuration = try DaemonConfiguration(reader: reader, environment: environment, file: file)
        assert(reader.keysRead(notIn: keys).isEmpty, "keys missing from DaemonConfiguration.keys")
        return configuration
    }

    init(reader: ConfigurationReader, environment: [String: String], file: ConfigurationFile?) throws {
        configFile = file?.path
        address = reader.string(forKey: "address") ?? "unix:" + DefaultPaths.socket(environment: environment)
        guard address.hasPrefix("unix:"), address.count > 5 else {
            throw ConfigurationError(key: "address", reason: "expected unix:PATH, got \"\(address)\"")
        }
        let synchronous = reader.string(forKey: "store.synchronous", default: "normal")
        guard ["normal", "full"].contains(synchronous) else {
            throw ConfigurationError(key: "store.synchronous", reason: "expected normal or full")
        }
        let checkAtStartMaxBytes = reader.int(
            forKey: "store.checkAtStartMaxBytes", default: PropertyStore.checkAtStartMaxBytes)
        guard checkAtStartMaxBytes >= 0 else {
            throw ConfigurationError(key: "store.checkAtStartMaxBytes", reason: "expected a size in bytes, 0 or more")
        }
        store = StoreSettings(
            path: reader.string(forKey: "store.path") ?? DefaultPaths.store(environment: environment),
            synchronous: synchronous,
            historyLimit: try reader.positiveInt(forKey: "store.historyLimit", default: 10_000),
            checkAtStartMaxBytes: checkAtStartMaxBytes)
        limits = try Self.limits(reader)
        allowedUIDs = try reader.intArray(forKey: "access.allowedUids", default: []).map { uid in
            guard let value = UInt32(exactly: uid) else {
                throw ConfigurationError(key: "access.allowedUids", reason: "\(uid) is not a uid")
            }
            return value
        }
        let level = reader.string(forKey: "log.level", default: "info")
        guard let parsed = Logger.Level(rawValue: level) else {
            throw ConfigurationError(key: "log.level", reason: "unknown level \"\(level)\"")
        }
        logLevel = parsed
        lifecycle = try LifecycleSettings(reader: reader)
        let fleetPrefixes = reader.stringArray(forKey: "fleet.prefixes") ?? []
        for prefix in fleetPrefixes {
            let key: PropertyKey
            do {
                key = try PropertyKey(prefix, limits: limits.keyLimits)
            } catch {
                throw ConfigurationError(key: "fleet.prefixes", reason: "\"\(prefix)\" is not a key: \(error.reason)")
            }
            guard !BusNames.isReserved(key.rawValue) else {
                throw ConfigurationError(key: "fleet.prefixes", reason: "\"\(prefix)\" is a reserved subtree")
            }
        }
        fleet = FleetSettings(
            prefixes: fleetPrefixes,
            requestTimeoutMs: try reader.positiveInt(forKey: "fleet.requestTimeoutMs", default: 5000))
        settings = try SettingsPaths(reader: reader, environment: environment)
        let bridge = try BridgeSettings.load(file: file, environment: environment, limits: limits.keyLimits)
        self.bridge = bridge.mappings
        bridgeTransforms = bridge.transforms
    }

    static func limits(_ reader: ConfigurationReader) throws -> DaemonLimits {
        var limits = DaemonLimits()
        limits.maxMessageSize = try reader.positiveInt(forKey: "limits.maxMessageSize", default: limits.maxMessageSize)
        limits.maxJSONDepth = try reader.positiveInt(forKey: "limits.maxJsonDepth", default: limits.maxJSONDepth)
        limits.maxKeyLength = try reader.positiveInt(forKey: "limits.maxKeyLength", default: limits.maxKeyLength)
        limits.maxKeyDepth = try reader.positiveInt(forKey: "limits.maxKeyDepth", default: limits.maxKeyDepth)
        limits.maxValueSize = try reader.positiveInt(forKey: "limits.maxValueSize", default: limits.maxValueSize)
        limits.maxPatterns = try reader.positiveInt(forKey: "limits.maxPatterns", default: limits.maxPatterns)
        limits.maxQueuedBytes = try reader.positiveInt(forKey: "limits.maxQueuedBytes", default: limits.maxQueuedBytes)
        limits.maxConnectionsPerUid = try reader.positiveInt(
            forKey: "limits.maxConnectionsPerUid", default: limits.maxConnectionsPerUid)
        limits.maxBytesPerUid = try reader.positiveInt(forKey: "limits.maxBytesPerUid", default: limits.maxBytesPerUid)
        limits.frameTimeoutMs = try reader.positiveInt(forKey: "limits.frameTimeoutMs", default: limits.frameTimeoutMs)
        let policy = reader.string(forKey: "limits.slowSubscriber", default: limits.slowSubscriber.rawValue)
        guard let slow = DaemonLimits.SlowSubscriberPolicy(rawValue: policy) else {
            throw ConfigurationError(key: "limits.slowSubscriber", reason: "expected coalesce or disconnect")
        }
        limits.slowSubscriber = slow
        return limits
    }
}

extension DaemonConfiguration {
    /// The configuration that a file with `contents` gives, without flags or environment variables.
    package static func fromFile(_ contents: [UInt8]) throws -> DaemonConfiguration {
        let file = try ConfigurationFile.parse(contents, path: "configuration")
        return try DaemonConfiguration(
            reader: ConfigurationReader(arguments: [], environment: [:], file: file), environment: [:], file: file)
    }
}
