import BeaconProtocol

/// The bus's one method table: every method of every interface the bus serves, named and moded as the generated
/// code of its `.varlink` file says, with the function that answers it. The Get, Set, Unset and Post calls are also answered read in place, without parsing them into values.
enum BusMethods {
    typealias Handler = @Sendable (BeaconBus, CallParameters, BusClient) throws(VarlinkError) -> Void

    struct Method: Sendable {
        /// Streams its replies: must be called with `more` (`@mode stream` in its interface's `.varlink` file).
        var streams: Bool
        var handler: Handler

        init(_ mode: VarlinkMethodMode, handler: @escaping Handler) {
            streams = mode == .stream
            self.handler = handler
        }
    }

    static let table: [String: Method] = [
        IOBeaconProperties.Get.method: Method(IOBeaconProperties.Get.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.properties.get(parameters, client: client)
        },
        IOBeaconProperties.Set.method: Method(IOBeaconProperties.Set.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.properties.set(parameters, client: client)
        },
        IOBeaconProperties.Unset.method: Method(IOBeaconProperties.Unset.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.properties.unset(parameters, client: client)
        },
        IOBeaconProperties.List.method: Method(IOBeaconProperties.List.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.properties.list(parameters, client: client)
        },
        IOBeaconProperties.Watch.method: Method(IOBeaconProperties.Watch.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.properties.watch(parameters, client: client)
        },
        IOBeaconNotifications.Post.method: Method(IOBeaconNotifications.Post.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.notifications.post(parameters, client: client)
        },
        IOBeaconNotifications.Observe.method: Method(IOBeaconNotifications.Observe.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.notifications.observe(parameters, client: client)
        },
        IOBeaconSettings.Describe.method: Method(IOBeaconSettings.Describe.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.settingsService.describe(parameters, client: client)
        },
        IOBeaconSettings.Reset.method: Method(IOBeaconSettings.Reset.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.settingsService.reset(parameters, client: client)
        },
        IOBeaconSettings.Schemas.method: Method(IOBeaconSettings.Schemas.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.settingsService.schemas(parameters, client: client)
        },
        IOBeaconSettings.Register.method: Method(IOBeaconSettings.Register.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.settingsService.register(parameters, client: client)
        },
        IOBeaconSettings.Dump.method: Method(IOBeaconSettings.Dump.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.settingsService.dump(parameters, client: client)
        },
        IOBeaconSettings.Load.method: Method(IOBeaconSettings.Load.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.settingsService.load(parameters, client: client)
        },
        IOBeaconProviders.Provide.method: Method(IOBeaconProviders.Provide.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.providers.provide(parameters, client: client)
        },
        IOBeaconProviders.Answer.method: Method(IOBeaconProviders.Answer.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.providers.answer(parameters, client: client)
        },
        IOBeaconProviders.Publish.method: Method(IOBeaconProviders.Publish.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.providers.publish(parameters, client: client)
        },
        IOBeaconProviders.SetAvailable.method: Method(IOBeaconProviders.SetAvailable.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.providers.setAvailable(parameters, client: client)
        },
        IOBeacon.Suspend.method: Method(IOBeacon.Suspend.mode) { bus, _, client in bus.suspend(client: client) },
        IOBeacon.Resume.method: Method(IOBeacon.Resume.mode) { bus, _, client throws(VarlinkError) in
            try bus.resume(client: client)
        },
        IOBeaconDaemon.Status.method: Method(IOBeaconDaemon.Status.mode) { bus, _, client in bus.replyStatus(to: client)
        },
        IOBeaconDaemon.Clients.method: Method(IOBeaconDaemon.Clients.mode) { bus, _, client in
            bus.replyClients(to: client)
        },
        IOBeaconLifecycle.State.method: Method(IOBeaconLifecycle.State.mode) { bus, _, client in
            client.connection.reply(bus.lifecycle.stateReply)
        },
        IOBeaconLifecycle.HoldSleep.method: Method(IOBeaconLifecycle.HoldSleep.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.lifecycle.holdSleep(parameters, client: client)
        },
        IOBeaconLifecycle.Release.method: Method(IOBeaconLifecycle.Release.mode) {
            bus, parameters, client throws(VarlinkError) in
            try bus.lifecycle.release(parameters, client: client)
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
        if call.methodIs(IOBeaconNotifications.Post.staticMethod) {
            try bus.notifications.post(parameters, client: client)
        } else if call.methodIs(IOBeaconProperties.Get.staticMethod) {
            try bus.properties.get(parameters, client: client)
        } else if call.methodIs(IOBeaconProperties.Set.staticMethod) {
            try bus.properties.set(parameters, client: client)
        } else if call.methodIs(IOBeaconProperties.Unset.staticMethod) {
            try bus.properties.unset(parameters, client: client)
        } else {
            return false
        }
        return true
    }
}
