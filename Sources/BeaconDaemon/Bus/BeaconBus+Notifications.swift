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
            throw BusError.invalidName(name, reason: "names below lifecycle, session, system and daemon are reserved")
        }
        var bytes: [UInt8] = []
        swap(&bytes, &fanOut.tickNotificationBytes)
        defer { swap(&bytes, &fanOut.tickNotificationBytes) }
        let start = bytes.count
        NotificationEvent.begin(key, into: &bytes)
        if let size = parameters.appendOptionalEncodedValue("userInfo", after: ",\"userInfo\":", to: &bytes),
            size > limits.maxValueSize
        {
            bytes.removeSubrange(start...)
            throw BusError.limitExceeded("maxValueSize", maximum: limits.maxValueSize)
        }
        let posted = fanOut.post(key, begun: start, in: &bytes, origin: client.origin.encodedJSON)
        requestEndOfTick()
        client.connection.reply("sequence", integer: posted)
    }

    /// Posts a notification to the observers connected now; returns its sequence number.
    @discardableResult
    func post(name: PropertyKey, userInfo: [UInt8]?, origin: Origin) -> Int64 {
        var bytes: [UInt8] = []
        swap(&bytes, &fanOut.tickNotificationBytes)
        defer { swap(&bytes, &fanOut.tickNotificationBytes) }
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
            interface: "io.beacon.Notifications"
        )
        let current = fanOut.sequence
        let subscription = Subscription(kind: .observe, patterns: patterns, client: client, start: current)
        try addSubscription(subscription)
        client.connection.sendEncoded { buffer in
            StreamReply.noNotifications(sequence: current, into: &buffer)
        }
        client.connection.beginStream()
    }
}
