import BeaconProtocol
import NIOCore
import VarlinkServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension BeaconBus {
    /// The software version reported by GetInfo and Status.
    package static var softwareVersion: String { BeaconVersion.current }

    /// `io.beacon.Daemon.Status`.
    func status(_ parameters: CallParameters, client: BusClient) {
        client.connection.reply(["status": .object(status())])
    }

    /// `io.beacon.Daemon.Clients`.
    func clients(_ parameters: CallParameters, client: BusClient) {
        client.connection.reply(["clients": .array(clientList())])
    }

    func status() -> [String: JSONValue] {
        var status: [String: JSONValue] = [
            "software": .string(Self.softwareVersion),
            "pid": .int(Int64(getpid())),
            "uid": .int(Int64(getuid())),
            "startedUsec": .int(daemonStatus.startedUsec),
            "address": .string(address),
            "store": .string(writer.storage.path),
            "clients": .int(Int64(clients.count)),
            "subscriptions": .int(Int64(fanOut.subscriptionCount)),
            "properties": .int(Int64(table.count)),
            "version": .int(table.version),
            "sequence": .int(fanOut.sequence),
        ]
        status["lifecycle"] = .string(lifecycle.summary)
        status["settings"] = settingsService.status
        if let storeFailure = daemonStatus.storeFailure {
            status["storeError"] = .object([
                "reason": .string(storeFailure.reason), "sinceUsec": .int(storeFailure.sinceUsec),
            ])
        }
        if let storeDamage = daemonStatus.storeDamage {
            status["storeDamage"] = .object([
                "reason": .string(storeDamage.reason), "sinceUsec": .int(storeDamage.sinceUsec),
            ])
        }
        if providers.hasClaims { status["providers"] = .array(providers.providerStatus()) }
        if !lifecycle.dbusBuses.isEmpty {
            status["bridge"] = .object(lifecycle.dbusBuses.mapValues { .string($0) })
        }
        return status
    }

    private func clientList() -> [JSONValue] {
        clients.keys.sorted().compactMap { id -> JSONValue? in
            guard let client = clients[id] else { return nil }
            let connection = client.connection
            var object: [String: JSONValue] = [
                "id": .int(Int64(id)),
                "uid": .int(Int64(connection.credentials.uid)),
                "pid": .int(Int64(connection.credentials.pid)),
                "connectedUsec": .int(connection.connectedUsec),
                "patterns": .array((client.subscription?.patterns ?? []).map { .string($0.rawValue) }),
                "queuedBytes": .int(Int64(connection.queuedBytes)),
                "ephemeral": .int(Int64(table.ephemeralKeys[id]?.count ?? 0)),
            ]
            if let command = connection.credentials.command { object["command"] = .string(command) }
            object["suspensions"] = .int(Int64(client.suspensions))
            if let subscription = client.subscription {
                object["stream"] = .string(subscription.methodName)
                object["policy"] = .string(subscription.policy.rawValue)
                object["followsSession"] = .bool(subscription.followsSession)
                object["suspended"] = .bool(fanOut.isSuspended(subscription))
                object["held"] = .int(Int64(subscription.outbox.count))
                object["dropped"] = .int(Int64(fanOut.dropped(of: subscription)))
                if let wanted = subscription.object { object["object"] = .string(wanted) }
            }
            if lifecycle.sleep.contains(connection.id) {
                object["stream"] = .string(IOBeaconLifecycle.HoldSleep.method)
            }
            return .object(object)
        }
    }

    /// Sends ``statusLine`` to ``statusReporter`` when the counts in it changed, at most once per 2 s, from a task
    /// scheduled only then: an idle daemon has no timer running for it.
    func reportStatusIfChanged() {
        guard let server, daemonStatus.scheduleReport(of: statusCounts) else { return }
        server.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) { [self] in
            daemonStatus.report(statusCounts, line: statusLine)
        }
    }

    private var statusCounts: DaemonStatus.Counts {
        DaemonStatus.Counts(
            clients: clients.count, subscriptions: fanOut.subscriptionCount, properties: table.count)
    }

    /// A one-line summary for the service manager's STATUS=.
    package var statusLine: String {
        "\(clients.count) clients, \(fanOut.subscriptionCount) subscriptions, \(table.count) properties"
    }

    /// The integrity check of a store too large to check before serving came back. Damage is logged and shown in
    /// `Status` (`storeDamage`) until the next start, which checks the store first and sets it aside.
    func integrityChecked(_ outcome: PropertyStore.IntegrityCheck) {
        switch outcome {
        case .sound:
            logger.info("the store passed its integrity check", metadata: ["store": "\(writer.storage.path)"])
        case .damaged(let reason):
            daemonStatus.storeDamage = (WallClock.nowUsec(), reason)
            logger.critical(
                "the store failed its integrity check; the next start sets it aside and starts an empty store",
                metadata: ["store": "\(writer.storage.path)", "reason": "\(reason)"])
        case .failed(let reason):
            logger.error(
                "the store's integrity check could not run",
                metadata: ["store": "\(writer.storage.path)", "reason": "\(reason)"])
        }
    }

    /// Sets a reserved property on the daemon's own behalf (for example the lifecycle bridge); `nil` deletes it.
    package func setSystemProperty(_ name: String, _ value: JSONValue?) {
        properties.setSystemProperty(name, value)
    }

    /// Posts a notification on the daemon's own behalf.
    package func postSystemNotification(_ name: String, userInfo: JSONValue?) {
        guard notifications.postSystemNotification(name, userInfo: userInfo) else {
            logger.error("invalid system notification name", metadata: ["name": "\(name)"])
            return
        }
    }

    /// Reads the schema and lockdown directories again and applies what changed (``SettingsService/reload(changed:)``).
    package func reloadSettingsFiles(changed: Set<String>? = nil) {
        settingsService.reload(changed: changed)
    }

    /// Uses `paths` from now on and reads them.
    func updateSettingsPaths(_ paths: SettingsPaths) {
        settingsService.paths = paths
        settingsService.reload()
    }
}

/// The daemon's own properties and notifications, and the session's activity, for the lifecycle service.
extension BeaconBus: LifecycleHost {
    var eventLoop: (any EventLoop)? { server?.eventLoop }

    func sessionActivityChanged(_ active: Bool) {
        fanOut.sessionActivityChanged(active)
    }
}

/// The store and the clients, for the providers' service.
extension BeaconBus: ProvidersHost {
    var currentVersion: Int64 { table.version }

    func version(of key: String) throws(VarlinkError) -> Int64? {
        try table.entry(key)?.version
    }

    func keys(below prefix: PropertyKey) throws(VarlinkError) -> [PropertyKey] {
        try table.keys(below: prefix)
    }

    func client(_ id: Int) -> BusClient? {
        clients[id]
    }

    func storeProvided(_ key: PropertyKey, value: [UInt8], origin: Origin) throws(VarlinkError) -> Int64? {
        try properties.storeUnlessHeld(key, value: value, origin: origin)
    }

    func delete(_ name: String, origin: Origin) throws(VarlinkError) -> Int64? {
        try properties.delete(name, origin: origin)
    }
}

/// The bus's own methods: `io.beacon`'s Suspend and Resume, and `io.beacon.Daemon`. The bus is `package` (the daemon's
/// executable makes it), and a conformance's functions are as visible as its type: this internal type conforms for it.
final class BusOwnMethods: IOBeacon.Handlers, IOBeaconDaemon.Handlers {
    unowned let bus: BeaconBus

    init(bus: BeaconBus) {
        self.bus = bus
    }

    func suspend(_ parameters: CallParameters, client: BusClient) {
        bus.suspend(parameters, client: client)
    }

    func resume(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        try bus.resume(parameters, client: client)
    }

    func status(_ parameters: CallParameters, client: BusClient) {
        bus.status(parameters, client: client)
    }

    func clients(_ parameters: CallParameters, client: BusClient) {
        bus.clients(parameters, client: client)
    }
}
