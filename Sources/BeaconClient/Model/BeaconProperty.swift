import BeaconProtocol
import BeaconProtocolFoundation

/// The credentials of the connection that made a change or posted a notification.
public struct BeaconOrigin: Sendable, Hashable {
    public var uid: Int64
    public var pid: Int64
    /// The process name, when the daemon could read it.
    public var command: String?
    /// The machine the change came from, when a provider brought it from elsewhere (beacon-fleet); `nil` for a
    /// change made on this machine's daemon.
    public var machine: String?

    public init(uid: Int64, pid: Int64, command: String? = nil, machine: String? = nil) {
        self.uid = uid
        self.pid = pid
        self.command = command
        self.machine = machine
    }

    init(parsing value: JSONValue?) throws(BeaconError) {
        let reader = try ReplyReader(value, "origin")
        self.init(
            uid: try reader.int("uid"), pid: try reader.int("pid"), command: reader.optionalString("command"),
            machine: reader.optionalString("machine"))
    }
}

/// The lockdown rule that locks a key: an administrator's file under the daemon's lockdown directory.
public struct BeaconLock: Sendable, Hashable {
    /// The lockdown file.
    public var file: String
    /// The line of the rule in it.
    public var line: Int
    /// Whether the rule forces a value; otherwise it holds the key at its default.
    public var forced: Bool

    public init(file: String, line: Int, forced: Bool) {
        self.file = file
        self.line = line
        self.forced = forced
    }
}

/// A property as the daemon shows it: its stored value, or its schema's default, or the value a lock forces.
public struct BeaconProperty: Sendable, Hashable {
    public var key: String
    public var value: JSONValue
    /// The version of the change that set ``value``.
    public var version: Int64
    /// When that change was made, in microseconds since the Unix epoch.
    public var modifiedUsec: Int64
    /// Whether the property goes away with the connection that set it.
    public var ephemeral: Bool
    public var origin: BeaconOrigin
    /// Whether ``value`` is the default of the key's schema rather than a stored value (``version`` is then 0).
    public var isDefault: Bool = false
    /// The lockdown rule that locks the key, if one does.
    public var lock: BeaconLock?
    /// Set when the key's provider is gone or cannot reach where the values live (beacon-fleet without an etcd
    /// quorum): ``value`` is the last one known here.
    public var unavailable: Unavailability?

    /// Why a provided key's value may be out of date, and since when (microseconds since the Unix epoch).
    public struct Unavailability: Sendable, Hashable {
        public var reason: String
        public var sinceUsec: Int64
    }

    public init(
        key: String,
        value: JSONValue,
        version: Int64,
        modifiedUsec: Int64,
        ephemeral: Bool,
        origin: BeaconOrigin
    ) {
        self.key = key
        self.value = value
        self.version = version
        self.modifiedUsec = modifiedUsec
        self.ephemeral = ephemeral
        self.origin = origin
    }

    init(_ property: IOBeaconProperties.Property) {
        self.init(
            key: property.key, value: property.value ?? .null, version: Int64(property.version),
            modifiedUsec: Int64(property.modifiedUsec), ephemeral: property.ephemeral,
            origin: BeaconOrigin(
                uid: Int64(property.origin.uid), pid: Int64(property.origin.pid), command: property.origin.command,
                machine: property.origin.machine))
        isDefault = property.default ?? false
        lock = property.locked.map { BeaconLock(file: $0.file, line: $0.line, forced: $0.forced) }
    }

    /// ``value`` decoded as `type`; throws ``BeaconError/Code/decodingFailed``.
    public func value<T: Decodable>(as type: T.Type) throws(BeaconError) -> T {
        try ValueCoding.decode(type, from: value, key: key, version: version)
    }
}

/// One change of one key, as delivered by a watch.
public struct PropertyChange: Sendable, Hashable {
    public var key: String
    /// The new value; `nil` when the key was deleted.
    public var value: JSONValue?
    /// The previous value, when the watch asked for it and the key existed before.
    public var old: JSONValue?
    public var version: Int64
    public var deleted: Bool
    public var origin: BeaconOrigin?
    /// Whether ``value`` is the default of the key's schema: nothing is stored, or a lock holds the key at its default.
    public var isDefault: Bool = false
    /// Whether a lockdown file locks the key.
    public var isLocked: Bool = false

    public init(
        key: String,
        value: JSONValue?,
        old: JSONValue? = nil,
        version: Int64,
        deleted: Bool,
        origin: BeaconOrigin? = nil
    ) {
        self.key = key
        self.value = value
        self.old = old
        self.version = version
        self.deleted = deleted
        self.origin = origin
    }

    /// A change as a Watch reply's frame holds it.
    /// Fields are moved from the frame's change one by one (each reply builds one per change).
    init(_ change: consuming WatchReplyFrame.Change) {
        key = change.key
        value = change.shownValue
        old = change.old
        version = change.version
        deleted = change.deleted
        if let origin = change.origin {
            self.origin = BeaconOrigin(
                uid: origin.uid, pid: origin.pid, command: origin.command, machine: origin.machine)
        } else {
            origin = nil
        }
        isDefault = change.isDefault
        isLocked = change.isLocked
    }

    /// ``value`` decoded as `type` (`nil` for a deletion); throws ``BeaconError/Code/decodingFailed``.
    public func value<T: Decodable>(as type: T.Type) throws(BeaconError) -> T? {
        guard let value else { return nil }
        return try ValueCoding.decode(type, from: value, key: key, version: version)
    }
}

/// A notification as delivered to an observer.
public struct BeaconNotification: Sendable, Hashable {
    public var name: String
    /// The sender's object, when the poster gave one.
    public var object: String?
    public var userInfo: JSONValue?
    /// The daemon-wide number of the notification.
    public var sequence: Int64
    public var origin: BeaconOrigin?

    public init(name: String, userInfo: JSONValue? = nil, sequence: Int64, origin: BeaconOrigin? = nil) {
        self.name = name
        self.userInfo = userInfo
        self.sequence = sequence
        self.origin = origin
    }

    init(parsing value: JSONValue) throws(BeaconError) {
        let reader = try ReplyReader(value, "notification")
        self.init(
            name: try reader.string("name"),
            userInfo: reader.value("userInfo"),
            sequence: try reader.int("sequence"),
            origin: try? BeaconOrigin(parsing: reader.members["origin"])
        )
        object = reader.optionalString("object")
    }

    /// ``userInfo`` decoded as `type` (`nil` when there is none); throws ``BeaconError/Code/decodingFailed``.
    public func userInfo<T: Decodable>(as type: T.Type) throws(BeaconError) -> T? {
        guard let userInfo else { return nil }
        return try ValueCoding.decode(type, from: userInfo, key: name, version: sequence)
    }
}

/// Converts between Swift values and JSON values, with the client's errors.
enum ValueCoding {
    static func encode<T: Encodable>(_ value: T, key: String) throws(BeaconError) -> JSONValue {
        if let json = value as? JSONValue { return json }
        do {
            return try JSONValue(encoding: value)
        } catch {
            throw .encodingFailed(key: key, cause: error)
        }
    }

    static func decode<T: Decodable>(
        _ type: T.Type,
        from json: JSONValue,
        key: String,
        version: Int64?
    ) throws(BeaconError) -> T {
        // The common scalar types are read straight from the value, without a JSON decoder (which allocates several
        // objects per value); what does not fit is left to the decoder, which reports it. Each cast follows a check
        // that T is that very type (an `as?` would ask the runtime), and returns at once: this runs unspecialized for
        // `T`, where a `T?` in between cost a look-up of its type metadata for every value.
        switch json {
        case .int(let number):
            if T.self == Int.self, let integer = Int(exactly: number) { return unsafeBitCast(integer, to: T.self) }
            if T.self == Int64.self { return unsafeBitCast(number, to: T.self) }
            if T.self == Double.self, let double = Double(exactly: number) { return unsafeBitCast(double, to: T.self) }
        case .double(let number):
            if T.self == Double.self { return unsafeBitCast(number, to: T.self) }
        case .bool(let flag):
            if T.self == Bool.self { return unsafeBitCast(flag, to: T.self) }
        case .string(let text):
            if T.self == String.self { return unsafeBitCast(text, to: T.self) }
        default:
            break
        }
        if T.self == JSONValue.self { return unsafeBitCast(json, to: T.self) }
        do {
            return try json.decode(type)
        } catch {
            throw .decodingFailed(key: key, type: type, version: version, cause: error)
        }
    }
}
