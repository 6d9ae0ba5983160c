import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension BeaconBus {
    /// The software version reported by GetInfo and Status.
    public static let softwareVersion = "0.1.0"

    func handleDaemon(_ call: VarlinkCall, client: BusClient) throws(VarlinkError) {
        switch call.member {
        case "Status":
            client.connection.reply(["status": .object(status())])
        case "Clients":
            client.connection.reply(["clients": .array(clientList())])
        default:
            throw .methodNotImplemented(call.method)
        }
    }

    func status() -> [String: JSONValue] {
        var status: [String: JSONValue] = [
            "software": .string(Self.softwareVersion),
            "pid": .int(Int64(getpid())),
            "uid": .int(Int64(getuid())),
            "startedUsec": .int(startedUsec),
            "address": .string(address),
            "store": .string(store.path),
            "clients": .int(Int64(clients.count)),
            "subscriptions": .int(Int64(subscriptionCount)),
            "properties": .int(Int64(properties.count)),
            "version": .int(version),
            "sequence": .int(sequence),
        ]
        status["lifecycle"] = .string(lifecycle.summary)
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
                "ephemeral": .int(Int64(client.ephemeralKeys.count)),
            ]
            if let command = connection.credentials.command { object["command"] = .string(command) }
            if let subscription = client.subscription { object["stream"] = .string(subscription.methodName) }
            if lifecycle.participants[connection.id] != nil {
                object["stream"] = .string("io.beacon.Lifecycle.HoldSleep")
            }
            return .object(object)
        }
    }

    /// A one-line summary for the service manager's STATUS=.
    public var statusLine: String {
        "\(clients.count) clients, \(subscriptionCount) subscriptions, \(properties.count) properties"
    }

    /// Sets a reserved property on the daemon's own behalf (for example the lifecycle bridge); `nil` deletes it.
    public func setSystemProperty(_ name: String, _ value: JSONValue?) {
        guard let key = try? PropertyKey(name) else {
            logger.error("invalid system property key", metadata: ["key": "\(name)"])
            return
        }
        if let value {
            var encoded: [UInt8] = []
            value.encode(into: &encoded)
            let index = properties.index(forKey: name)
            if let index, properties.values[index].value == encoded { return }
            _ = store(
                key: key,
                value: encoded,
                at: index,
                ephemeralOwner: nil,
                origin: .daemon,
                connection: nil
            )
        } else if let entry = properties[name] {
            delete(key: name, entry: entry, origin: .daemon)
        }
    }

    /// Posts a notification on the daemon's own behalf.
    public func postSystemNotification(_ name: String, userInfo: JSONValue?) {
        guard let key = try? PropertyKey(name) else {
            logger.error("invalid system notification name", metadata: ["name": "\(name)"])
            return
        }
        var encoded: [UInt8]?
        if let userInfo {
            var bytes: [UInt8] = []
            userInfo.encode(into: &bytes)
            encoded = bytes
        }
        post(name: key, userInfo: encoded, origin: .daemon)
    }
}
