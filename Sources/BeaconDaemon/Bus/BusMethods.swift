import BeaconProtocol

/// The bus's one method table: every method of every interface the bus serves, named and moded as the generated
/// code of its `.varlink` file says, with the function of its service that answers it. The Get, Set, Unset and Post calls are also answered read in place, without parsing them into values.
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

    /// Every method of every interface served, from the table each interface's generated code gives
    /// (`handlers(_:)`): each service conforms to its interfaces' generated `Handlers` protocol, so a method added
    /// to a `.varlink` file is a compile error until its service answers it.
    static let table: [String: Method] = {
        var table: [String: Method] = [:]
        func add<Service>(
            _ methods: [(
                method: String, mode: VarlinkMethodMode,
                handle: @Sendable (Service, CallParameters, BusClient) throws(VarlinkError) -> Void
            )],
            of service: @escaping @Sendable (BeaconBus) -> Service
        ) {
            for (method, mode, handle) in methods {
                table[method] = Method(mode) { bus, parameters, client throws(VarlinkError) in
                    try handle(service(bus), parameters, client)
                }
            }
        }
        add(IOBeacon.handlers(BusOwnMethods.self)) { $0.ownMethods }
        add(IOBeaconProperties.handlers(PropertiesService.self)) { $0.properties }
        add(IOBeaconNotifications.handlers(NotificationsService.self)) { $0.notifications }
        add(IOBeaconSettings.handlers(SettingsService.self)) { $0.settingsService }
        add(IOBeaconDaemon.handlers(BusOwnMethods.self)) { $0.ownMethods }
        add(IOBeaconLifecycle.handlers(LifecycleService.self)) { $0.lifecycle }
        add(IOBeaconProviders.handlers(ProviderRegistry.self)) { $0.providers }
        return table
    }()

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
