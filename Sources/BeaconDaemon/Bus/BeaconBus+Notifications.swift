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
        let encoded = parameters.optionalEncodedValue("userInfo")
        let key: PropertyKey
        do {
            key = try PropertyKey(name, limits: limits.keyLimits)
        } catch {
            throw BusError.invalidName(name, reason: error.reason)
        }
        guard !Self.isReserved(name) else {
            throw BusError.invalidName(name, reason: "names below lifecycle, session, system and daemon are reserved")
        }
        if let encoded, encoded.count > limits.maxValueSize {
            throw BusError.limitExceeded("maxValueSize", maximum: limits.maxValueSize)
        }
        let posted = post(name: key, userInfo: encoded, encodedOrigin: client.origin.encodedJSON)
        client.connection.sendEncoded { buffer in
            JSONWriter.appendASCII("{\"parameters\":{\"sequence\":", to: &buffer)
            JSONWriter.appendInt(posted, to: &buffer)
            JSONWriter.appendASCII("}}", to: &buffer)
            buffer.append(0)
        }
    }

    /// Posts a notification to the observers connected now; returns its sequence number.
    @discardableResult
    func post(name: PropertyKey, userInfo: [UInt8]?, origin: Origin) -> Int64 {
        post(name: name, userInfo: userInfo, encodedOrigin: origin.encodedJSON)
    }

    /// Posts a notification from the origin whose JSON is `encodedOrigin`; returns its sequence number.
    private func post(name: PropertyKey, userInfo: [UInt8]?, encodedOrigin: [UInt8]) -> Int64 {
        sequence += 1
        tickNotifications.append(
            NotificationEvent(name: name, userInfo: userInfo, sequence: sequence, origin: encodedOrigin))
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
            StreamReply.notifications([], sequence: current, into: &buffer)
        }
        client.connection.beginStream()
    }
}
