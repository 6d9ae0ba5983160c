import BeaconProtocol

/// Method names of the Beacon interfaces.
enum Method {
    static let watch = IOBeaconProperties.Watch.method
    static let observe = IOBeaconNotifications.Observe.method
    static let holdSleep = IOBeaconLifecycle.HoldSleep.method
    static let releaseSleep = IOBeaconLifecycle.Release.method
    static let suspend = IOBeacon.Suspend.method
    static let resume = IOBeacon.Resume.method
    static let register = IOBeaconSettings.Register.method
}

extension BeaconClient {
    /// The property stored under `key`. Throws ``BeaconError/Code/keyNotFound`` when there is none.
    public func get(_ key: String) async throws(BeaconError) -> BeaconProperty {
        let reply = try await typed { try await IOBeaconProperties.Client(calls).get(key: key) }
        var property = BeaconProperty(reply.property)
        property.unavailable = reply.unavailable.map { .init(reason: $0.reason, sinceUsec: Int64($0.sinceUsec)) }
        return property
    }

    /// The value stored under `key` decoded as `type`, or `nil` when the key does not exist. Throws
    /// ``BeaconError/Code/decodingFailed`` when the stored value is not a `T`.
    public func value<T: Decodable>(_ key: String, as type: T.Type) async throws(BeaconError) -> T? {
        do {
            return try await get(key).value(as: type)
        } catch  where error.code == .keyNotFound {
            return nil
        }
    }

    /// Stores `value` under `key` and returns the version of the change.
    ///
    /// - Parameters:
    ///   - ifVersion: makes the call a compare-and-set: the value is stored only when the key's current version
    ///     is `ifVersion` (0: the key must not exist); else ``BeaconError/Code/versionMismatch``, whose
    ///     parameters hold the `actual` version.
    ///   - ephemeral: the property is removed when this client's command connection closes, which includes a
    ///     restart of the daemon; the client does not store it again after reconnecting.
    @discardableResult
    public func set(
        _ key: String,
        to value: JSONValue,
        ifVersion: Int64? = nil,
        ephemeral: Bool = false
    ) async throws(BeaconError) -> Int64 {
        let version = ifVersion.map { Int($0) }
        let reply = try await typed {
            try await IOBeaconProperties.Client(calls).set(
                key: key, value: value, ifVersion: version, ephemeral: ephemeral ? true : nil)
        }
        return Int64(reply.version)
    }

    /// Stores any `Encodable` value under `key` (encoded to JSON); see ``set(_:to:ifVersion:ephemeral:)``.
    @discardableResult
    public func set<T: Encodable>(
        _ key: String,
        to value: T,
        ifVersion: Int64? = nil,
        ephemeral: Bool = false
    ) async throws(BeaconError) -> Int64 {
        let json = try ValueCoding.encode(value, key: key)
        return try await set(key, to: json, ifVersion: ifVersion, ephemeral: ephemeral)
    }

    /// Deletes `key` and returns the version of the deletion. Throws ``BeaconError/Code/keyNotFound`` when the
    /// key does not exist; `ifVersion` works as in ``set(_:to:ifVersion:ephemeral:)``.
    @discardableResult
    public func unset(_ key: String, ifVersion: Int64? = nil) async throws(BeaconError) -> Int64 {
        let version = ifVersion.map { Int($0) }
        return Int64(
            try await typed { try await IOBeaconProperties.Client(calls).unset(key: key, ifVersion: version) }.version)
    }

    /// The properties at or below `prefix` (every property when `nil`), sorted by key, and the daemon's current
    /// version.
    public func list(prefix: String? = nil) async throws(BeaconError) -> (properties: [BeaconProperty], version: Int64)
    {
        let reply = try await typed { try await IOBeaconProperties.Client(calls).list(prefix: prefix) }
        return (reply.properties.map(BeaconProperty.init), Int64(reply.version))
    }

    /// Posts a notification and returns its sequence number.
    ///
    /// - Parameters:
    ///   - object: names the poster's object; observers may ask for the notifications of one object only.
    ///   - deliverImmediately: the notification reaches suspended observers at once (after what they kept), as
    ///     with `DistributedNotificationCenter`'s `deliverImmediately` (see ``suspend()``).
    @discardableResult
    public func post(
        _ name: String,
        userInfo: JSONValue? = nil,
        object: String? = nil,
        deliverImmediately: Bool = false
    ) async throws(BeaconError) -> Int64 {
        try await postJSON(name, userInfo: userInfo, object: object, deliverImmediately: deliverImmediately)
    }

    /// Posts a notification whose `userInfo` is any `Encodable` value; `object` and `deliverImmediately` work as
    /// in the post of a `JSONValue`.
    @discardableResult
    public func post<T: Encodable>(
        _ name: String,
        userInfo: T,
        object: String? = nil,
        deliverImmediately: Bool = false
    ) async throws(BeaconError) -> Int64 {
        try await postJSON(
            name, userInfo: try ValueCoding.encode(userInfo, key: name), object: object,
            deliverImmediately: deliverImmediately)
    }

    /// Sends `object` and `deliverImmediately` only when set: a plain post stays a name and perhaps a userInfo,
    /// which the daemon reads on its fast path.
    private func postJSON(
        _ name: String,
        userInfo: JSONValue?,
        object: String?,
        deliverImmediately: Bool
    ) async throws(BeaconError) -> Int64 {
        // A userInfo of null is no userInfo, for the daemon as for the generated call, which leaves it out.
        let reply = try await typed {
            try await IOBeaconNotifications.Client(calls).post(
                name: name, userInfo: userInfo, object: object, deliverImmediately: deliverImmediately ? true : nil)
        }
        return Int64(reply.sequence)
    }

    /// `io.beacon.Daemon.Status`: the daemon's state.
    public func daemonStatus() async throws(BeaconError) -> DaemonStatus {
        DaemonStatus(try await typed { try await IOBeaconDaemon.InterfaceClient(calls).status() }.status)
    }

    /// `io.beacon.Daemon.Clients`: the connected clients, by connection number.
    public func daemonClients() async throws(BeaconError) -> [DaemonClient] {
        try await typed { try await IOBeaconDaemon.InterfaceClient(calls).clients() }.clients.map(DaemonClient.init)
    }
}
