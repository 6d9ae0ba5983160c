import BeaconProtocol

extension BeaconBus {
    func post(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let name = try parameters.string("name")
        let key: PropertyKey
        do {
            key = try PropertyKey(name, limits: limits.keyLimits)
        } catch {
            throw BusError.invalidName(name, reason: error.reason)
        }
        guard !Self.isReserved(name) else {
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
        requestEndOfTick()
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
        requestEndOfTick()
        return posted
    }

    func observe(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let patterns = try parsePatterns(
            try parameters.stringArray("patterns"),
            interface: IOBeaconNotifications.name
        )
        let delivery = try deliveryOptions(parameters)
        let object = try parameters.optionalString("object")
        let current = fanOut.sequence
        let subscription = Subscription(
            kind: .observe, patterns: patterns, client: client, start: current, policy: delivery.policy,
            followsSession: delivery.followsSession, object: object)
        try addSubscription(subscription)
        client.connection.sendEncoded { buffer in
            StreamReply.noNotifications(sequence: current, into: &buffer)
        }
        client.connection.beginStream()
    }
}

extension BeaconBus {
    /// The `whileSuspended` and `suspendWhileInactive` parameters of a Watch or Observe.
    func deliveryOptions(_ parameters: CallParameters) throws(VarlinkError) -> (
        policy: DeliveryPolicy, followsSession: Bool
    ) {
        var policy = DeliveryPolicy.hold
        if let name = try parameters.optionalString("whileSuspended") {
            guard let named = DeliveryPolicy(rawValue: name) else { throw .invalidParameter("whileSuspended") }
            policy = named
        }
        return (policy, try parameters.bool("suspendWhileInactive", default: false))
    }

    /// `io.beacon.Suspend`: suspends the delivery of the stream on this connection, once more.
    func suspend(client: BusClient) {
        client.suspensions += 1
        client.connection.reply([:])
    }

    /// `io.beacon.Resume`: takes back one Suspend; the last one delivers what was kept.
    func resume(client: BusClient) throws(VarlinkError) {
        guard client.suspensions > 0 else { throw BusError.notSuspended() }
        client.suspensions -= 1
        if client.suspensions == 0, let subscription = client.subscription {
            fanOut.resumeDelivery(of: subscription)
        }
        client.connection.reply([:])
    }
}
