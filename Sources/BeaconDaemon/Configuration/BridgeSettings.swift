import BeaconConfiguration
import BeaconProtocol
import BeaconSystemd

/// The declarative D-Bus bridge: D-Bus properties and signals of other services mapped onto Beacon properties and
/// notifications, from the `bridge` section of `beacon/bridge.json` in each data directory (the machine's mappings,
/// installed with the package: `/usr/share/beacon/bridge.json`) and of the configuration file, strongest last.
///
/// ```json
/// "bridge": {
///   "properties": {
///     "system.power.profile": {
///       "bus": "system", "name": "net.hadess.PowerProfiles", "path": "/net/hadess/PowerProfiles",
///       "interface": "net.hadess.PowerProfiles", "property": "ActiveProfile"
///     }
///   },
///   "notifications": {
///     "system.memory.lowMemoryWarning": { "bus": "system", ..., "signal": "LowMemoryWarning", "names": ["level"] }
///   }
/// }
/// ```
///
/// Each entry is keyed by its Beacon key or notification name and names its source with exactly one of
/// `property` or `signal`. A stronger source's entry replaces a weaker one's of the same key; `null` removes it.
/// See config/README.md for every field.
enum BridgeSettings {
    static let fields: Set<String> = [
        "bus", "name", "path", "interface", "property", "signal", "match", "argument", "read", "initial", "map",
        "otherwise", "names", "quietMs", "quietValue",
    ]

    /// The bridge's mappings and what the daemon makes of their values.
    struct Loaded: Sendable {
        var mappings: [DBusMapping] = []
        var transforms: [DBusMapping.Target: BridgeTransform] = [:]
    }

    /// The data directories' `beacon/bridge.json` files (strongest first), then the configuration file's section.
    static func load(
        file: ConfigurationFile?, environment: [String: String], limits: KeyLimits
    ) throws -> Loaded {
        var documents: [(source: String, document: JSONValue)] = []
        for path in DefaultPaths.dataFiles("beacon/bridge.json", environment: environment).reversed() {
            guard let data = try ConfigurationFile.load(path, allowMissing: true) else { continue }
            documents.append((path, data.document))
        }
        if let file { documents.append((file.path, file.document)) }
        // Entries by kind and key; a stronger document replaces or (with null) removes a weaker one's.
        var entries: [String: [String: JSONValue]] = [:]
        for (source, document) in documents {
            guard case .object(let root) = document, let section = root["bridge"] else { continue }
            guard case .object(let kinds) = section else {
                throw ConfigurationError(
                    key: "bridge", reason: "expected an object with properties and notifications (\(source))")
            }
            for (kind, value) in kinds {
                guard kind == "properties" || kind == "notifications", case .object(let listed) = value else {
                    throw ConfigurationError(
                        key: "bridge.\(kind)", reason: "expected \"properties\" or \"notifications\", each an object")
                }
                for (target, entry) in listed {
                    entries[kind, default: [:]][target] = entry == .null ? nil : entry
                }
            }
        }
        var loaded = Loaded()
        for kind in entries.keys.sorted() {
            let listed = entries[kind]!
            for target in listed.keys.sorted() {
                let (mapping, transform) = try mapping(
                    target: target, kind: kind, entry: listed[target]!, limits: limits)
                loaded.mappings.append(mapping)
                if let transform { loaded.transforms[mapping.target] = transform }
            }
        }
        return loaded
    }

    private static func mapping(
        target: String,
        kind: String,
        entry: JSONValue,
        limits: KeyLimits
    ) throws -> (DBusMapping, BridgeTransform?) {
        let key = "bridge.\(kind).\(target)"
        guard case .object(let fields) = entry else {
            throw ConfigurationError(key: key, reason: "expected an object")
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.fields.contains($0) }) {
            throw ConfigurationError(key: key, reason: "unknown field \"\(unknown)\"")
        }
        func text(_ name: String) throws -> String? {
            guard let value = fields[name] else { return nil }
            guard case .string(let string) = value, !string.isEmpty else {
                throw ConfigurationError(key: "\(key).\(name)", reason: "expected a non-empty string")
            }
            return string
        }
        func required(_ name: String) throws -> String {
            guard let value = try text(name) else {
                throw ConfigurationError(key: "\(key).\(name)", reason: "missing")
            }
            return value
        }
        /// `value` as an array of strings; `nil` when absent, an error naming `field` when it is something else.
        func strings(_ value: JSONValue?, _ field: String) throws -> [String]? {
            guard let value else { return nil }
            guard case .array(let elements) = value, elements.allSatisfy({ $0.stringValue != nil }) else {
                throw ConfigurationError(key: "\(key).\(field)", reason: "expected an array of strings")
            }
            return elements.compactMap(\.stringValue)
        }
        do {
            _ = try PropertyKey(target, limits: limits)
        } catch {
            throw ConfigurationError(key: key, reason: "\"\(target)\" is not a valid key: \(error.reason)")
        }
        if LifecycleProperty(rawValue: target) != nil || target == "lifecycle" || target.hasPrefix("lifecycle.") {
            throw ConfigurationError(key: key, reason: "\"\(target)\" belongs to the lifecycle bridge")
        }
        let source: DBusMapping.Source
        switch (try text("property"), try text("signal")) {
        case (let property?, nil): source = .property(property)
        case (nil, let signal?): source = .signal(signal)
        default: throw ConfigurationError(key: key, reason: "expected exactly one of \"property\" and \"signal\"")
        }
        let bus: DBusBusAddress
        switch try text("bus") ?? "session" {
        case "system": bus = .system
        case "session": bus = .session
        case let address where address.utf8.contains(UInt8(ascii: ":")): bus = .address(address)
        case let other:
            throw ConfigurationError(
                key: "\(key).bus",
                reason: "expected system, session or a D-Bus address, got \"\(other)\""
            )
        }
        var mapping = DBusMapping(
            bus: bus,
            name: try required("name"),
            path: try required("path"),
            interface: try required("interface"),
            source: source,
            target: kind == "properties" ? .property(target) : .notification(target)
        )
        let signalOnly = ["match", "argument", "read", "initial"].filter { fields[$0] != nil }
        if case .property = source, let field = signalOnly.first {
            throw ConfigurationError(key: "\(key).\(field)", reason: "only for a signal source")
        }
        if let match = fields["match"] {
            guard case .array(let elements) = match,
                elements.allSatisfy({ $0 == .null || $0.stringValue != nil })
            else { throw ConfigurationError(key: "\(key).match", reason: "expected an array of strings or nulls") }
            mapping.signalMatch = elements.map(\.stringValue)
        }
        if let argument = fields["argument"] {
            guard case .int(let index) = argument, (0...63).contains(index) else {
                throw ConfigurationError(key: "\(key).argument", reason: "expected an argument index, 0 to 63")
            }
            mapping.argument = Int(index)
        }
        switch fields["read"] {
        case nil: break
        case .string(let method)?: mapping.read = DBusMapping.Read(method: method)
        case .object(let call)?:
            guard case .string(let method)? = call["method"], Set(call.keys).isSubset(of: ["method", "arguments"])
            else {
                throw ConfigurationError(
                    key: "\(key).read", reason: "expected a method name or {\"method\": ..., \"arguments\": [...]}")
            }
            mapping.read = DBusMapping.Read(
                method: method, arguments: try strings(call["arguments"], "read.arguments") ?? [])
        default:
            throw ConfigurationError(key: "\(key).read", reason: "expected a method name or an object")
        }
        if let initial = fields["initial"] {
            guard let value = DBusValue(json: initial) else {
                throw ConfigurationError(key: "\(key).initial", reason: "expected a boolean, a number or a string")
            }
            mapping.initial = value
        }
        if case .notification = mapping.target, mapping.read != nil || mapping.initial != nil {
            throw ConfigurationError(key: key, reason: "read and initial are for properties")
        }
        do {
            try mapping.validate()
        } catch {
            throw ConfigurationError(key: key, reason: error.message)
        }
        var transform = BridgeTransform()
        if let map = fields["map"] {
            guard case .object(let values) = map else {
                throw ConfigurationError(key: "\(key).map", reason: "expected an object")
            }
            transform.map = values
        }
        transform.otherwise = fields["otherwise"]
        if let names = try strings(fields["names"], "names") {
            guard case .notification = mapping.target else {
                throw ConfigurationError(key: "\(key).names", reason: "only for notifications")
            }
            transform.names = names
        }
        switch (fields["quietMs"], fields["quietValue"]) {
        case (nil, nil): break
        case (.int(let milliseconds)?, let value?) where milliseconds > 0:
            guard case .property = mapping.target, case .signal = source else {
                throw ConfigurationError(key: "\(key).quietMs", reason: "only for a signal mapped onto a property")
            }
            transform.quietMs = Int(milliseconds)
            transform.quietValue = value
        default:
            throw ConfigurationError(key: "\(key).quietMs", reason: "expected a positive quietMs with a quietValue")
        }
        return (mapping, transform == BridgeTransform() ? nil : transform)
    }
}

/// What the daemon makes of a bridged value before it publishes it: a bridge entry's `map`, `otherwise`, `names`,
/// `quietMs` and `quietValue`.
struct BridgeTransform: Sendable, Hashable {
    /// Values by the text of the bridged value: a string's own characters, any other value's compact JSON (`4`,
    /// `true`).
    var map: [String: JSONValue] = [:]
    /// The value of a text `map` does not list; without it such a value passes unchanged.
    var otherwise: JSONValue?
    /// Notifications: `userInfo` holds the arguments under these names (`{"level": 2}`).
    var names: [String] = []
    /// A property fed by a signal returns to `quietValue` once no signal came for this long.
    var quietMs: Int?
    var quietValue: JSONValue?

    func apply(_ value: JSONValue) -> JSONValue {
        guard !map.isEmpty || otherwise != nil else { return value }
        let text: String
        if case .string(let string) = value {
            text = string
        } else {
            var bytes: [UInt8] = []
            value.encode(into: &bytes)
            text = String(decoding: bytes, as: UTF8.self)
        }
        return map[text] ?? otherwise ?? value
    }
}

extension DBusValue {
    /// The D-Bus value of a JSON boolean, number or string (for a bridge entry's `initial`).
    init?(json: JSONValue) {
        switch json {
        case .bool(let flag): self = .bool(flag)
        case .int(let number): self = .int64(number)
        case .double(let number): self = .double(number)
        case .string(let text): self = .string(text)
        default: return nil
        }
    }
}
