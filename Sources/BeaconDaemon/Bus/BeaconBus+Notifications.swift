import BeaconProtocol

extension BeaconBus {
    func handleNotifications(_ call: VarlinkCall, client: BusClient) throws(VarlinkError) {
        let parameters = CallParameters(call)
        switch call.member {
        case "Post":
            try post(parameters, client: client)
        case "Observe":
            guard call.more else { throw .expectedMore() }
            try observe(parameters, client: client)
        default:
            throw .methodNotImplemented(call.method)
        }
    }

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
        // The tick's notification bytes are taken out while this one is appended (one access to the property).
        var bytes: [UInt8] = []
        swap(&bytes, &tickNotificationBytes)
        defer { swap(&bytes, &tickNotificationBytes) }
        let start = bytes.count
        NotificationEvent.begin(key, into: &bytes)
        if let size = parameters.appendOptionalEncodedValue("userInfo", after: ",\"userInfo\":", to: &bytes),
            size > limits.maxValueSize
        {
            bytes.removeSubrange(start...)
            throw BusError.limitExceeded("maxValueSize", maximum: limits.maxValueSize)
        }
        let posted = post(name: key, begun: start, in: &bytes, encodedOrigin: client.origin.encodedJSON)
        client.connection.reply("sequence", integer: posted)
    }

    /// Posts a notification to the observers connected now; returns its sequence number.
    @discardableResult
    func post(name: PropertyKey, userInfo: [UInt8]?, origin: Origin) -> Int64 {
        var bytes: [UInt8] = []
        swap(&bytes, &tickNotificationBytes)
        defer { swap(&bytes, &tickNotificationBytes) }
        let start = bytes.count
        NotificationEvent.begin(name, into: &bytes)
        if let userInfo {
            JSONWriter.appendASCII(",\"userInfo\":", to: &bytes)
            bytes.append(contentsOf: userInfo)
        }
        return post(name: name, begun: start, in: &bytes, encodedOrigin: origin.encodedJSON)
    }

    /// Posts the notification begun at `start` in `bytes`, the tick's notification bytes (see
    /// ``NotificationEvent/begin(_:into:)``), from the origin whose JSON is `encodedOrigin`; returns its sequence
    /// number.
    private func post(name: PropertyKey, begun start: Int, in bytes: inout [UInt8], encodedOrigin: [UInt8]) -> Int64 {
        sequence += 1
        NotificationEvent.end(sequence: sequence, origin: encodedOrigin, into: &bytes)
        tickNotifications.append(NotificationEvent(name: name, sequence: sequence, start: start, end: bytes.count))
        requestFlush()
        return sequence
    }

    private func observe(_ parameters: CallParameters, client: BusClient) throws(VarlinkError) {
        let patterns = try parsePatterns(
            try parameters.stringArray("patterns"),
            interface: "io.beacon.Notifications"
        )
        let subscription = Subscription(kind: .observe, patterns: patterns, client: client, start: sequence)
        addSubscription(subscription)
        let current = sequence
        client.connection.sendEncoded { buffer in
            StreamReply.noNotifications(sequence: current, into: &buffer)
        }
        client.connection.beginStream()
    }
}
