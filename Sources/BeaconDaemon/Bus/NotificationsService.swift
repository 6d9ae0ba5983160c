import BeaconProtocol

/// `io.beacon.Notifications`: posts and their observers.
///
/// A notification is not stored: a post is numbered and queued in the tick's ``BusTransaction``, whose ``FanOut``
/// delivers it at the end of the tick to the observers connected then. Post is also answered read in place
/// (``BusMethods/handleInPlace(_:client:bus:)``).
final class NotificationsService {
    /// The tick's transaction, asked for the end of the tick.
    let transaction: BusTransaction
    /// The transaction's fan-out, where posts are queued (held here too: a post reaches it without a second load).
    let fanOut: FanOut
    var limits: DaemonLimits

    init(transaction: BusTransaction, limits: DaemonLimits) {
        self.transaction = transaction
        self.fanOut = transaction.fanOut
        self.limits = limits
    }

    func post(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("name")
        let key: PropertyKey
        do {
            key = try PropertyKey(name, limits: limits.keyLimits)
        } catch {
            throw BusError.invalidName(name, reason: error.reason)
        }
        guard !BusNames.isReserved(name) else {
            throw BusError.invalidName(
                name, reason: "names below lifecycle, session, system, desktop and daemon are reserved")
        }
        var bytes: [UInt8] = []
        swap(&bytes, &fanOut.tick.notificationBytes)
        defer { swap(&bytes, &fanOut.tick.notificationBytes) }
        let start = bytes.count
        NotificationEvent.begin(key, into: &bytes)
        let userInfo = parameters.appendOptionalEncodedValue("userInfo", after: ",\"userInfo\":", to: &bytes)
        if let userInfo, userInfo > limits.maxValueSize {
            bytes.removeSubrange(start...)
            throw BusError.limitExceeded("maxValueSize", maximum: limits.maxValueSize)
        }
        // Most posts have a name and perhaps a userInfo: the other parameters are looked for only when there are more.
        var object: String?
        var immediate = false
        if parameters.count > (userInfo == nil ? 1 : 2) {
            do {
                object = try parameters.optionalString("object")
                immediate = try parameters.bool("deliverImmediately", default: false)
            } catch {
                bytes.removeSubrange(start...)
                throw error
            }
            if let object { NotificationEvent.appendObject(object, into: &bytes) }
        }
        let posted = fanOut.post(
            key, begun: start, in: &bytes, origin: client.origin.encodedJSON, object: object, immediate: immediate)
        transaction.requestEndOfTick()
        client.connection.reply("sequence", integer: posted)
    }

    /// Posts a notification to the observers connected now; returns its sequence number.
    @discardableResult
    func post(name: PropertyKey, userInfo: [UInt8]?, origin: Origin) -> Int64 {
        var bytes: [UInt8] = []
        swap(&bytes, &fanOut.tick.notificationBytes)
        defer { swap(&bytes, &fanOut.tick.notificationBytes) }
        let start = bytes.count
        NotificationEvent.begin(name, into: &bytes)
        if let userInfo {
            JSONWriter.appendASCII(",\"userInfo\":", to: &bytes)
            bytes.append(contentsOf: userInfo)
        }
        let posted = fanOut.post(name, begun: start, in: &bytes, origin: origin.encodedJSON)
        transaction.requestEndOfTick()
        return posted
    }

    /// Posts a notification on the daemon's own behalf.
    func postSystemNotification(_ name: String, userInfo: JSONValue?) -> Bool {
        guard let key = try? PropertyKey(name) else { return false }
        var encoded: [UInt8]?
        if let userInfo {
            var bytes: [UInt8] = []
            userInfo.encode(into: &bytes)
            encoded = bytes
        }
        post(name: key, userInfo: encoded, origin: .daemon)
        return true
    }

    func observe(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let patterns = try limits.parsePatterns(
            try parameters.stringArray("patterns"),
            interface: IOBeaconNotifications.name
        )
        let delivery = try parameters.deliveryOptions()
        let object = try parameters.optionalString("object")
        let current = fanOut.sequence
        let subscription = Subscription(
            kind: .observe, patterns: patterns, client: client, start: current, policy: delivery.policy,
            followsSession: delivery.followsSession, object: object)
        try transaction.subscribe(subscription)
        client.connection.sendEncoded { buffer in
            StreamReply.noNotifications(sequence: current, into: &buffer)
        }
        client.connection.beginStream()
    }
}

extension CallParameters {
    /// The `whileSuspended` and `suspendWhileInactive` parameters of a Watch or Observe.
    func deliveryOptions() throws(VarlinkError) -> (policy: DeliveryPolicy, followsSession: Bool) {
        var policy = DeliveryPolicy.hold
        if let name = try optionalString("whileSuspended") {
            guard let named = DeliveryPolicy(rawValue: name) else { throw .invalidParameter("whileSuspended") }
            policy = named
        }
        return (policy, try bool("suspendWhileInactive", default: false))
    }
}

extension NotificationsService: IOBeaconNotifications.Handlers {}
