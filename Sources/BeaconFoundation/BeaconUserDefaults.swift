import BeaconBlockingClient
import BeaconProtocol
import Foundation

/// A `UserDefaults` suite kept by the user's beacond: persistent, shared by every process of the user, and live.
///
/// ```swift
/// let defaults = BeaconUserDefaults(suiteName: "com.example.editor")!
/// defaults.register(defaults: ["fontSize": 12])
/// defaults.set(14, forKey: "fontSize")          // the property com.example.editor.fontSize
/// defaults.integer(forKey: "fontSize")          // 14, in every process
/// ```
///
/// The suite's name is the prefix of its keys (`com.example.editor.fontSize`), so a suite name and its keys must be
/// Beacon keys (dot-separated words). Values are property-list values (``PropertyListJSON``). Foundation's own
/// getters (`integer(forKey:)`, `bool(forKey:)`, `url(forKey:)`...) read through ``object(forKey:)`` and keep their
/// conversions. A change made by another process updates the values at once and posts
/// `UserDefaults.didChangeNotification`, as a change made here does. Registered defaults go to the daemon
/// (`beaconctl describe` shows them) for as long as this object lives; a key that a lockdown file locks answers
/// `objectIsForced(forKey:)` and refuses `set`, as a forced default does on the Mac.
open class BeaconUserDefaults: UserDefaults {
    /// The key prefix: the suite's name.
    public let prefix: String
    private let address: BeaconAddress
    private let lock = NSLock()
    /// The suite's stored values by their key within the suite, as the daemon last told.
    private var stored: [String: Any] = [:]
    /// The suite's keys a lock holds.
    private var locked: Set<String> = []
    /// The version of the change each key's value is from. A change of the Watch that is not newer than what this
    /// object wrote since (the Watch reports this object's own writes too, later) is passed over.
    private var versions: [String: Int64] = [:]
    private var registered: [String: Any] = [:]
    /// The connection that keeps the registration of the defaults (it lasts as long as the connection).
    private var registration: BlockingVarlinkConnection?
    private let watch: BlockingVarlinkConnection
    private let writes: BlockingVarlinkConnection

    /// The suite `suiteName` on the daemon at `address` (`BEACON_ADDRESS`, else `$XDG_RUNTIME_DIR/beacon.sock`);
    /// `nil` when the name is not a Beacon key or no daemon answers.
    public init?(suiteName: String?, address: BeaconAddress? = nil) {
        guard let suiteName, (try? PropertyKey(suiteName)) != nil,
            let address = address ?? (try? BeaconAddress.default()),
            let watch = try? BlockingVarlinkConnection(address: address, timeout: .seconds(5)),
            let writes = try? BlockingVarlinkConnection(address: address, timeout: .seconds(5))
        else { return nil }
        prefix = suiteName
        self.address = address
        self.watch = watch
        self.writes = writes
        super.init(suiteName: suiteName)
        // The current values come in the Watch's first reply: read here, before the object is used.
        do {
            try watch.send(
                VarlinkCall(
                    method: IOBeaconProperties.Watch.method,
                    parameters: ["patterns": [.string(prefix + ".**")], "initial": true], more: true))
            apply(try watch.receive(deadline: BlockingDeadline(timeout: .seconds(5))), initial: true)
        } catch {
            return nil
        }
        // The thread reads the Watch until the connection closes (deinit) and holds the object only weakly.
        let reader = WatchReader(defaults: self, watch: watch)
        let thread = Thread { reader.run() }
        thread.name = "BeaconUserDefaults \(suiteName)"
        thread.start()
    }

    deinit {
        // Wakes the reading thread, which then closes the connection: closing it here could hand its descriptor to
        // another file while that thread still waits on it.
        _ = shutdown(watch.fileDescriptor, Int32(SHUT_RDWR))
        writes.close()
        registration?.close()
    }

    private func name(_ key: String) -> String { prefix + "." + key }

    /// Takes the changes of a Watch reply into the values; a change made by another process posts
    /// `didChangeNotification`.
    fileprivate func take(_ reply: VarlinkReply) { apply(reply, initial: false) }

    private func apply(_ reply: VarlinkReply, initial: Bool) {
        var changedElsewhere = false
        lock.withLock {
            for change in reply.parameters["changes"]?.arrayValue ?? [] {
                guard let key = change["key"]?.stringValue, key.hasPrefix(prefix + ".") else { continue }
                let local = String(key.dropFirst(prefix.count + 1))
                let version = change["version"]?.intValue ?? 0
                if let known = versions[local], version <= known { continue }
                versions[local] = version
                if change["deleted"] == true || change["default"] == true {
                    stored[local] = nil
                } else if let value = change["value"] {
                    stored[local] = PropertyListJSON.value(value)
                }
                if change["locked"] == true { locked.insert(local) } else { locked.remove(local) }
                if change["origin"]?["pid"]?.intValue != Int64(getpid()) { changedElsewhere = true }
            }
        }
        if changedElsewhere && !initial {
            NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: self)
        }
    }

    /// Applies a write of `key` that the daemon answered with `reply`, unless the Watch already brought a newer
    /// change of the key.
    private func take(write reply: [String: JSONValue], of key: String, _ change: (inout [String: Any]) -> Void) {
        let version = reply["version"]?.intValue ?? 0
        lock.withLock {
            if let known = versions[key], version <= known { return }
            versions[key] = version
            change(&stored)
        }
    }

    private func call(_ method: String, _ parameters: [String: JSONValue]) -> [String: JSONValue]? {
        lock.withLock { try? writes.call(VarlinkCall(method: method, parameters: parameters), timeout: .seconds(5)) }
    }

    // MARK: UserDefaults

    open override func object(forKey defaultName: String) -> Any? {
        lock.withLock { stored[defaultName] ?? registered[defaultName] }
    }

    open override func set(_ value: Any?, forKey defaultName: String) {
        guard let value else {
            removeObject(forKey: defaultName)
            return
        }
        guard (try? PropertyKey(name(defaultName))) != nil, let json = PropertyListJSON.json(Self.plain(value)),
            !objectIsForced(forKey: defaultName)
        else { return }
        guard let reply = call(IOBeaconProperties.Set.method, ["key": .string(name(defaultName)), "value": json])
        else { return }
        take(write: reply, of: defaultName) { $0[defaultName] = PropertyListJSON.value(json) }
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: self)
    }

    open override func set(_ url: URL?, forKey defaultName: String) {
        set(url?.absoluteString, forKey: defaultName)
    }

    /// A URL stored by ``set(_:forKey:)-(URL?,_)`` is its absolute string: read back as that URL. Any other string is
    /// a path, as Foundation reads it.
    open override func url(forKey defaultName: String) -> URL? {
        if let text = object(forKey: defaultName) as? String, let url = URL(string: text), url.scheme != nil {
            return url
        }
        return super.url(forKey: defaultName)
    }

    open override func removeObject(forKey defaultName: String) {
        guard (try? PropertyKey(name(defaultName))) != nil, !objectIsForced(forKey: defaultName) else { return }
        // A key without a value answers KeyNotFound: nothing to take then.
        if let reply = call(IOBeaconProperties.Unset.method, ["key": .string(name(defaultName))]) {
            take(write: reply, of: defaultName) { $0[defaultName] = nil }
        }
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: self)
    }

    /// Registers `registrationDictionary` with the daemon as the defaults of the suite's keys, for as long as this
    /// object lives, and answers them for keys that hold no value.
    open override func register(defaults registrationDictionary: [String: Any]) {
        var keys: [String: JSONValue] = [:]
        for (key, value) in registrationDictionary {
            guard (try? PropertyKey(name(key))) != nil, let json = PropertyListJSON.json(Self.plain(value)) else {
                continue
            }
            keys[name(key)] = ["default": json]
        }
        lock.withLock {
            registered.merge(registrationDictionary) { $1 }
            if registration == nil {
                registration = try? BlockingVarlinkConnection(address: address, timeout: .seconds(5))
            }
            _ = try? registration?.call(
                VarlinkCall(method: IOBeaconSettings.Register.method, parameters: ["schema": ["keys": .object(keys)]]),
                timeout: .seconds(5))
        }
    }

    open override func dictionaryRepresentation() -> [String: Any] {
        lock.withLock { registered.merging(stored) { $1 } }
    }

    open override func objectIsForced(forKey key: String) -> Bool {
        lock.withLock { locked.contains(key) }
    }

    open override func synchronize() -> Bool { true }

    /// A URL as its string, the way it is stored.
    private static func plain(_ value: Any) -> Any {
        if let url = value as? URL { return url.absoluteString }
        return value
    }
}

/// The Watch of a ``BeaconUserDefaults``, read on a thread of its own: the connection is used by that thread only
/// once the first reply was read, and the object is held weakly.
private final class WatchReader: @unchecked Sendable {
    private weak var defaults: BeaconUserDefaults?
    private let watch: BlockingVarlinkConnection

    init(defaults: BeaconUserDefaults, watch: BlockingVarlinkConnection) {
        self.defaults = defaults
        self.watch = watch
    }

    func run() {
        defer { watch.close() }
        while let reply = try? watch.receive() {
            guard let defaults else { return }
            defaults.take(reply)
        }
    }
}
