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
        let posted = try fanOut.post(key, origin: client.origin.encodedJSON) { bytes throws(VarlinkError) in
            if let size = parameters.appendOptionalEncodedValue("userInfo", after: ",\"userInfo\":", to: &bytes),
                size > limits.maxValueSize
            {
                throw BusError.limitExceeded("maxValueSize", maximum: limits.maxValueSize)
            }
        }
        requestEndOfTick()
        client.connection.reply("sequence", integer: posted)
    }

    /// Posts a notification to the observers connected now; returns its sequence number.
    @discardableResult
    func post(name: PropertyKey, userInfo: [UInt8]?, origin: Origin) -> Int64 {
        let posted = fanOut.post(name, origin: origin.encodedJSON) { bytes in
            if let userInfo {
                JSONWriter.appendASCII(",\"userInfo\":", to: &bytes)
                bytes.append(contentsOf: userInfo)
            }
        }
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
        addSubscription(subscription)
        client.connection.sendEncoded { buffer in
            StreamReply.noNotifications(sequence: current, into: &buffer)
        }
        client.connection.beginStream()
    }
}
