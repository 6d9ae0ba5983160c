import BeaconProtocol

/// The bus's one method table: every method of every interface the bus serves, with the function that answers
/// it. The Get, Set, Unset and Post calls are also answered read in place, without parsing them into values.
enum BusMethods {
    typealias Handler = @Sendable (BeaconBus, CallParameters, BusClient) throws(VarlinkError) -> Void

    struct Method: Sendable {
        /// Streams its replies: must be called with `more`.
        var streams = false
        var handler: Handler
    }

    static let table: [String: Method] = [
        "io.beacon.Properties.Get": Method { bus, parameters, client throws(VarlinkError) in
            try bus.get(parameters, client: client)
        },
        "io.beacon.Properties.Set": Method { bus, parameters, client throws(VarlinkError) in
            try bus.set(parameters, client: client)
        },
        "io.beacon.Properties.Unset": Method { bus, parameters, client throws(VarlinkError) in
            try bus.unset(parameters, client: client)
        },
        "io.beacon.Properties.List": Method { bus, parameters, client throws(VarlinkError) in
            try bus.list(parameters, client: client)
        },
        "io.beacon.Properties.Watch": Method(streams: true) { bus, parameters, client throws(VarlinkError) in
            try bus.watch(parameters, client: client)
        },
        "io.beacon.Notifications.Post": Method { bus, parameters, client throws(VarlinkError) in
            try bus.post(parameters, client: client)
        },
        "io.beacon.Notifications.Observe": Method(streams: true) { bus, parameters, client throws(VarlinkError) in
            try bus.observe(parameters, client: client)
        },
        "io.beacon.Settings.Describe": Method { bus, parameters, client throws(VarlinkError) in
            try bus.describe(parameters, client: client)
        },
        "io.beacon.Settings.Reset": Method { bus, parameters, client throws(VarlinkError) in
            try bus.reset(parameters, client: client)
        },
        "io.beacon.Settings.Schemas": Method { bus, parameters, client throws(VarlinkError) in
            try bus.schemas(parameters, client: client)
        },
        "io.beacon.Settings.Register": Method { bus, parameters, client throws(VarlinkError) in
            try bus.register(parameters, client: client)
        },
        "io.beacon.Settings.Dump": Method { bus, parameters, client throws(VarlinkError) in
            try bus.dump(parameters, client: client)
        },
        "io.beacon.Settings.Load": Method { bus, parameters, client throws(VarlinkError) in
            try bus.load(parameters, client: client)
        },
        "io.beacon.Providers.Provide": Method(streams: true) { bus, parameters, client throws(VarlinkError) in
            try bus.provide(parameters, client: client)
        },
        "io.beacon.Providers.Answer": Method { bus, parameters, client throws(VarlinkError) in
            try bus.answer(parameters, client: client)
        },
        "io.beacon.Providers.Publish": Method { bus, parameters, client throws(VarlinkError) in
            try bus.publish(parameters, client: client)
        },
        "io.beacon.Providers.SetAvailable": Method { bus, parameters, client throws(VarlinkError) in
            try bus.setAvailable(parameters, client: client)
        },
        "io.beacon.Suspend": Method { bus, _, client in bus.suspend(client: client) },
        "io.beacon.Resume": Method { bus, _, client throws(VarlinkError) in try bus.resume(client: client) },
        "io.beacon.Daemon.Status": Method { bus, _, client in bus.replyStatus(to: client) },
        "io.beacon.Daemon.Clients": Method { bus, _, client in bus.replyClients(to: client) },
        "io.beacon.Lifecycle.State": Method { bus, _, client in bus.replyLifecycleState(to: client) },
        "io.beacon.Lifecycle.HoldSleep": Method(streams: true) { bus, parameters, client throws(VarlinkError) in
            try bus.holdSleep(parameters, client: client)
        },
        "io.beacon.Lifecycle.Release": Method { bus, parameters, client throws(VarlinkError) in
            try bus.release(parameters, client: client)
        },
    ]

    /// Answers a parsed call. The server has checked that its interface declares the method.
    static func handle(_ call: VarlinkCall, client: BusClient, bus: BeaconBus) throws(VarlinkError) {
        guard let method = table[call.method] else { throw .methodNotImplemented(call.method) }
        if method.streams && !call.more { throw .expectedMore() }
        try method.handler(bus, CallParameters(call), client)
    }

    /// Answers a call read in place when it is one of the methods answered so; returns false otherwise.
    static func handleInPlace(_ call: VarlinkCallView, client: BusClient, bus: BeaconBus) throws(VarlinkError) -> Bool {
        let parameters = CallParameters(call)
        if call.methodIs("io.beacon.Notifications.Post") {
            try bus.post(parameters, client: client)
        } else if call.methodIs("io.beacon.Properties.Get") {
            try bus.get(parameters, client: client)
        } else if call.methodIs("io.beacon.Properties.Set") {
            try bus.set(parameters, client: client)
        } else if call.methodIs("io.beacon.Properties.Unset") {
            try bus.unset(parameters, client: client)
        } else {
            return false
        }
        return true
    }
}
