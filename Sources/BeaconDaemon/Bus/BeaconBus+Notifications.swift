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
        var fragment: [UInt8] = []
        fragment.reserveCapacity(name.utf8.count + 176)
        NotificationEvent.begin(key, into: &fragment)
        if let size = parameters.appendOptionalEncodedValue("userInfo", after: ",\"userInfo\":", to: &fragment),
            size > limits.maxValueSize
        {
            throw BusError.limitExceeded("maxValueSize", maximum: limits.maxValueSize)
        }
        let posted = post(name: key, begun: &fragment, encodedOrigin: client.origin.encodedJSON)
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
        var fragment: [UInt8] = []
        NotificationEvent.begin(name, into: &fragment)
        if let userInfo {
            JSONWriter.appendASCII(",\"userInfo\":", to: &fragment)
            fragment.append(contentsOf: userInfo)
        }
        return post(name: name, begun: &fragment, encodedOrigin: origin.encodedJSON)
    }

    /// Posts the notification begun in `fragment` (see ``NotificationEvent/begin(_:into:)``) from the origin whose
    /// JSON is `encodedOrigin`; returns its sequence number.
    private func post(name: PropertyKey, begun fragment: inout [UInt8], encodedOrigin: [UInt8]) -> Int64 {
        sequence += 1
        NotificationEvent.end(sequence: sequence, origin: encodedOrigin, into: &fragment)
        tickNotifications.append(NotificationEvent(name: name, sequence: sequence, fragment: fragment))
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
