import BeaconEventLoop
import CSystemd
import Logging
import Synchronization

/// One line of the declarative bridge: a D-Bus property or signal mapped onto a Beacon property or notification.
///
/// - property → property: the value read at start-up (`Properties.Get`), then every change
///   (`PropertiesChanged`); `nil` while the service is not on the bus or the property cannot be read.
/// - property → notification: one notification per change, with the new value as its only argument.
/// - signal → notification: one notification per signal, with the signal's arguments.
/// - signal → property: the signal's argument (an ``DBusValue/array(_:)`` of them when there are several), or the
///   one ``argument`` names. Until the first signal, the value ``read`` returns when the service comes on the
///   bus, else ``initial`` while it is on the bus; `nil` while it is off the bus.
///
/// A signal source counts only the signals whose first arguments equal ``signalMatch`` (the portal's
/// `SettingChanged` of one namespace and key, say).
public struct DBusMapping: Sendable, Hashable {
    /// A method of the mapping's interface whose reply's first value is a signal source's current value
    /// (`org.gnome.ScreenSaver.GetActive`, the portal's `Settings.ReadOne` with a namespace and a key).
    public struct Read: Sendable, Hashable {
        public var method: String
        /// String arguments of the call.
        public var arguments: [String]
        public init(method: String, arguments: [String] = []) {
            self.method = method
            self.arguments = arguments
        }
    }

    public enum Source: Sendable, Hashable {
        case property(String)
        case signal(String)
    }

    public enum Target: Sendable, Hashable {
        /// A Beacon key path.
        case property(String)
        /// A Beacon notification name.
        case notification(String)
    }

    public var bus: DBusBusAddress
    /// The bus name of the service (`org.freedesktop.NetworkManager`).
    public var name: String
    public var path: String
    public var interface: String
    public var source: Source
    public var target: Target
    /// Signal sources: the string values the first arguments must have; `nil` entries match anything.
    public var signalMatch: [String?] = []
    /// Signal sources: the index of the argument that is the value; `nil` for the only argument (all of them, as an
    /// array, when there are several).
    public var argument: Int?
    /// Signal sources mapped onto a property: how to read the current value when the service comes on the bus.
    public var read: Read?
    /// Signal sources mapped onto a property, without ``read``: the value while the service is on the bus and has
    /// sent no signal yet.
    public var initial: DBusValue?

    public init(
        bus: DBusBusAddress, name: String, path: String, interface: String, source: Source, target: Target,
        signalMatch: [String?] = [], argument: Int? = nil, read: Read? = nil, initial: DBusValue? = nil
    ) {
        self.bus = bus
        self.name = name
        self.path = path
        self.interface = interface
        self.source = source
        self.target = target
        self.signalMatch = signalMatch
        self.argument = argument
        self.read = read
        self.initial = initial
    }

    /// Throws a ``DBusConfigurationError`` naming the first field that D-Bus would reject.
    public func validate() throws(DBusConfigurationError) {
        guard sd_bus_service_name_is_valid(name) > 0 else {
            throw DBusConfigurationError("not a valid D-Bus bus name: \"\(name)\"")
        }
        guard sd_bus_object_path_is_valid(path) > 0 else {
            throw DBusConfigurationError("not a valid D-Bus object path: \"\(path)\"")
        }
        guard sd_bus_interface_name_is_valid(interface) > 0 else {
            throw DBusConfigurationError("not a valid D-Bus interface name: \"\(interface)\"")
        }
        let member: String
        switch source {
        case .property(let text), .signal(let text): member = text
        }
        guard sd_bus_member_name_is_valid(member) > 0 else {
            throw DBusConfigurationError("not a valid D-Bus member or property name: \"\(member)\"")
        }
        if let read, sd_bus_member_name_is_valid(read.method) <= 0 {
            throw DBusConfigurationError("not a valid D-Bus method name: \"\(read.method)\"")
        }
        if let argument, argument < 0 { throw DBusConfigurationError("a negative argument index: \(argument)") }
        switch target {
        case .property(let text), .notification(let text):
            guard !text.isEmpty else { throw DBusConfigurationError("empty target for \(interface).\(member)") }
        }
    }
}

/// What a ``DBusBridge`` reports.
public enum DBusBridgeEvent: Sendable, Hashable, CustomStringConvertible {
    /// The connection to one bus came up or went down.
    case busState(DBusBusAddress, DBusConnectionState)
    /// A mapped property has a new value; `nil` when its source is not available.
    case property(key: String, value: DBusValue?)
    /// A mapped signal (or property change) arrived.
    case notification(name: String, arguments: [DBusValue])

    public var description: String {
        switch self {
        case .busState(let bus, let state): return "\(bus): \(state)"
        case .property(let key, let value): return "\(key)=\(value.map(\.description) ?? "nil")"
        case .notification(let name, let arguments): return "\(name)\(arguments)"
        }
    }
}

/// Turns D-Bus properties and signals of other services into Beacon properties and notifications, as listed in
/// the configuration. One connection per bus used, on the loop given (else on a loop of its own); each reconnects
/// by itself, and a service that
/// leaves and comes back is read again.
///
/// ```swift
/// let bridge = try DBusBridge(mappings: [
///     DBusMapping(bus: .system, name: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
///                 interface: "org.freedesktop.NetworkManager", source: .property("State"),
///                 target: .property("network.state")),
/// ], logger: logger)
/// try bridge.start()
/// for await event in bridge.events { ... }
/// ```
public final class DBusBridge: Sendable {
    /// Meant for one consumer; finishes after ``shutdown()``.
    public let events: AsyncStream<DBusBridgeEvent>
    private let continuation: AsyncStream<DBusBridgeEvent>.Continuation
    private let parts: [(loop: SDBusLoop, core: DBusBridgeCore)]
    private let started = Mutex(false)

    /// Validates every mapping (throwing ``DBusConfigurationError`` for the first bad one).
    /// `eventLoop`: the loop to run on; without one, each bus's connection starts a loop (a thread) of its own.
    public init(
        mappings: [DBusMapping], reconnect: DBusReconnectPolicy = DBusReconnectPolicy(),
        callTimeout: Duration = .seconds(10), eventLoop: EpollEventLoop? = nil, logger: Logger
    ) throws {
        for mapping in mappings { try mapping.validate() }
        (events, continuation) = AsyncStream.makeStream(of: DBusBridgeEvent.self, bufferingPolicy: .unbounded)
        var buses: [DBusBusAddress] = []
        for mapping in mappings where !buses.contains(mapping.bus) { buses.append(mapping.bus) }
        var parts: [(loop: SDBusLoop, core: DBusBridgeCore)] = []
        for bus in buses {
            let loop = try SDBusLoop(address: bus, reconnectPolicy: reconnect, eventLoop: eventLoop, logger: logger)
            let core = DBusBridgeCore(
                mappings: mappings.filter { $0.bus == bus }, loop: loop, callTimeout: callTimeout, logger: logger
            ) { [continuation] event in continuation.yield(event) }
            parts.append((loop, core))
        }
        self.parts = parts
    }

    deinit {
        shutdown()
    }

    public func start() throws(DBusError) {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        for part in parts { part.loop.start(delegate: part.core) }
    }

    public func shutdown() {
        for part in parts { part.loop.stop() }
        continuation.finish()
    }

    /// The state of each bus connection (a bus is absent until its first attempt has an outcome), for
    /// `Daemon.Status`.
    public var busStates: [DBusBusAddress: DBusConnectionState] {
        var states: [DBusBusAddress: DBusConnectionState] = [:]
        for part in parts {
            if let state = part.core.sharedState.withLock({ $0 }) { states[part.loop.address] = state }
        }
        return states
    }
}

/// The bridge's work for one bus, on that bus's loop.
final class DBusBridgeCore: SDBusLoopDelegate, @unchecked Sendable {
    private let mappings: [DBusMapping]
    private let loop: SDBusLoop
    private let callTimeout: Duration
    private let logger: Logger
    private let emit: @Sendable (DBusBridgeEvent) -> Void
    /// Last value reported per mapping index (absent: nothing reported yet).
    private var last: [Int: DBusValue?] = [:]
    /// Mappings with a `Get` in flight; changes seen meanwhile are older than its reply.
    private var pendingReads: [Int: UInt64] = [:]
    private var readCounter: UInt64 = 0
    private var state: DBusConnectionState?
    /// ``state`` for other threads.
    let sharedState = Mutex<DBusConnectionState?>(nil)

    init(
        mappings: [DBusMapping], loop: SDBusLoop, callTimeout: Duration, logger: Logger,
        emit: @escaping @Sendable (DBusBridgeEvent) -> Void
    ) {
        self.mappings = mappings
        self.loop = loop
        self.callTimeout = callTimeout
        self.logger = logger
        self.emit = emit
    }

    func busDidConnect(_ loop: SDBusLoop) {
        pendingReads.removeAll()
        do {
            try installMatches()
        } catch {
            logger.info("D-Bus bridge cannot subscribe", metadata: ["bus": "\(loop.address)", "error": "\(error)"])
            report(.disconnected(reason: "cannot subscribe: \(error.message)"))
            return
        }
        report(.connected)
        for index in mappings.indices { read(index) }
    }

    func busDidDisconnect(_ loop: SDBusLoop, reason: String) {
        pendingReads.removeAll()
        report(.disconnected(reason: reason))
    }

    private func report(_ state: DBusConnectionState) {
        guard state != self.state else { return }
        let changesKind: Bool
        switch (self.state, state) {
        case (.disconnected?, .disconnected): changesKind = false
        default: changesKind = true
        }
        self.state = state
        sharedState.withLock { $0 = state }
        if changesKind { emit(.busState(loop.address, state)) }
    }

    private func installMatches() throws(DBusError) {
        var names: [String] = []
        for mapping in mappings where !names.contains(mapping.name) { names.append(mapping.name) }
        for name in names {
            let rule = SDBusMatchRule.signal(
                sender: Logind.busService, path: Logind.busPath, interface: Logind.busService,
                member: "NameOwnerChanged", arg0: name)
            _ = try loop.addMatch(rule) { [weak self] message in
                guard let arguments = try? message.readAll(), arguments.count == 3 else { return }
                self?.ownerChanged(name: name, newOwner: arguments[2].stringValue ?? "")
            }
        }
        var propertyRules: Set<String> = []
        for (index, mapping) in mappings.enumerated() {
            switch mapping.source {
            case .signal(let member):
                let rule = SDBusMatchRule.signal(
                    sender: mapping.name, path: mapping.path, interface: mapping.interface, member: member)
                _ = try loop.addMatch(rule) { [weak self] message in
                    guard let arguments = try? message.readAll() else { return }
                    self?.signalArrived(index, arguments)
                }
            case .property:
                let rule = SDBusMatchRule.signal(
                    sender: mapping.name, path: mapping.path, interface: Logind.properties,
                    member: "PropertiesChanged", arg0: mapping.interface)
                guard propertyRules.insert(rule).inserted else { continue }
                _ = try loop.addMatch(rule) { [weak self] message in
                    guard let arguments = try? message.readAll(), arguments.count >= 2 else { return }
                    self?.propertiesChanged(
                        path: message.path ?? "", interface: arguments[0].stringValue ?? "", changed: arguments[1],
                        invalidated: arguments.count > 2 ? arguments[2] : nil)
                }
            }
        }
    }

    /// Reads the current value of a property mapping, or of a signal mapped onto a property.
    private func read(_ index: Int) {
        let mapping = mappings[index]
        guard case .property(let property) = mapping.source else {
            readSignalSource(index)
            return
        }
        readCounter += 1
        let token = readCounter
        pendingReads[index] = token
        loop.call(
            destination: mapping.name, path: mapping.path, interface: Logind.properties, member: "Get",
            arguments: [.string(mapping.interface), .string(property)], timeout: callTimeout
        ) { [weak self] reply in
            guard let self, self.pendingReads[index] == token else { return }
            self.pendingReads[index] = nil
            switch reply {
            case .success(let message):
                do {
                    self.update(index, try message.readNext(), initial: true)
                } catch {
                    self.update(index, nil, initial: true)
                }
            case .failure(let error):
                self.logger.debug(
                    "D-Bus property unavailable",
                    metadata: ["property": "\(mapping.interface).\(property)", "error": "\(error)"])
                self.update(index, nil, initial: true)
            }
        }
    }

    /// The value of a signal mapped onto a property before its first signal: its ``DBusMapping/read`` method's
    /// reply, or ``DBusMapping/initial`` once the service is known to be on the bus.
    private func readSignalSource(_ index: Int) {
        let mapping = mappings[index]
        guard case .property = mapping.target, mapping.read != nil || mapping.initial != nil else { return }
        readCounter += 1
        let token = readCounter
        pendingReads[index] = token
        let call: (destination: String, path: String, interface: String, member: String, arguments: [String])
        if let read = mapping.read {
            call = (mapping.name, mapping.path, mapping.interface, read.method, read.arguments)
        } else {
            call = (Logind.busService, Logind.busPath, Logind.busService, "GetNameOwner", [mapping.name])
        }
        loop.call(
            destination: call.destination, path: call.path, interface: call.interface, member: call.member,
            arguments: call.arguments.map { .string($0) }, timeout: callTimeout
        ) { [weak self] reply in
            guard let self, self.pendingReads[index] == token else { return }
            self.pendingReads[index] = nil
            switch reply {
            case .success(let message):
                let value = mapping.read == nil ? mapping.initial : try? message.readNext()
                self.update(index, value, initial: true)
            case .failure(let error):
                self.logger.debug(
                    "D-Bus source unavailable",
                    metadata: ["source": "\(mapping.name) \(call.member)", "error": "\(error)"])
                self.update(index, nil, initial: true)
            }
        }
    }

    private func propertiesChanged(path: String, interface: String, changed: DBusValue, invalidated: DBusValue?) {
        let values: [String: DBusValue]
        if case .dict(let entries) = changed { values = entries } else { values = [:] }
        var invalidNames: [String] = []
        if case .array(let names)? = invalidated { invalidNames = names.compactMap(\.stringValue) }
        for (index, mapping) in mappings.enumerated() {
            guard case .property(let property) = mapping.source, mapping.path == path, mapping.interface == interface,
                pendingReads[index] == nil
            else { continue }
            if let value = values[property] {
                update(index, value, initial: false)
            } else if invalidNames.contains(property) {
                read(index)
            }
        }
    }

    private func signalArrived(_ index: Int, _ arguments: [DBusValue]) {
        let mapping = mappings[index]
        for (position, expected) in mapping.signalMatch.enumerated() {
            guard let expected else { continue }
            guard position < arguments.count, arguments[position].stringValue == expected else { return }
        }
        // A signal is newer than a read still in flight.
        pendingReads[index] = nil
        let value: DBusValue
        if let argument = mapping.argument {
            guard argument < arguments.count else { return }
            value = arguments[argument]
        } else {
            value = arguments.count == 1 ? arguments[0] : .array(arguments)
        }
        switch mapping.target {
        case .notification(let name):
            emit(.notification(name: name, arguments: mapping.argument == nil ? arguments : [value]))
        case .property:
            update(index, value, initial: false)
        }
    }

    private func ownerChanged(name: String, newOwner: String) {
        for (index, mapping) in mappings.enumerated() where mapping.name == name {
            if newOwner.isEmpty {
                pendingReads[index] = nil
                if case .property = mapping.target { update(index, nil, initial: false) }
            } else {
                read(index)
            }
        }
    }

    /// Reports a value of mapping `index` unless it is the one reported last. A property source mapped onto a
    /// notification posts only on changes, not for the value read at start-up.
    private func update(_ index: Int, _ value: DBusValue?, initial: Bool) {
        let previous = last[index]
        if let previous, previous == value { return }
        last[index] = .some(value)
        switch mappings[index].target {
        case .property(let key):
            if previous == nil && value == nil && !initial { return }
            emit(.property(key: key, value: value))
        case .notification(let name):
            guard !initial, previous != nil, let value else { return }
            emit(.notification(name: name, arguments: [value]))
        }
    }
}
