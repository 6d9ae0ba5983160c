import BeaconProtocol

/// Runs `io.beacon.Notifications.Observe` across reconnections.
///
/// Notifications are not stored: those posted while the client was disconnected are not delivered (the
/// notification bus has NotificationCenter semantics; state a late observer needs belongs in a property).
struct NotificationObservation: Sendable {
    let patterns: [String]
    var object: String? = nil
    /// `nil`: the daemon's default (hold).
    var behavior: BeaconClient.SuspensionBehavior? = nil

    /// Runs until the task is cancelled or the daemon refuses the call. `subscribed` is called after the first
    /// reply of every subscription, `deliver` with each notification in order, both on the connection's event loop.
    ///
    /// The observation follows the session when `client`'s ``BeaconClient/Options/suspendsWhileSessionInactive``
    /// is set, unless it is never suspended (`deliverImmediately`).
    func run(
        on client: BeaconClient,
        subscribed: @escaping @Sendable () -> Void = {},
        deliver: @escaping @Sendable (BeaconNotification) -> Void
    ) async -> BeaconError? {
        var parameters: [String: JSONValue] = ["patterns": .array(patterns.map { .string($0) })]
        if let object { parameters["object"] = .string(object) }
        if let behavior { parameters["whileSuspended"] = .string(behavior.rawValue) }
        if client.options.suspendsWhileSessionInactive && behavior != .deliverImmediately {
            parameters["suspendWhileInactive"] = true
        }
        let patterns = self.patterns
        let fixed = parameters
        @Sendable func makeParameters() -> [String: JSONValue] { fixed }
        return await client.runResubscribing(method: Method.observe, parameters: makeParameters) {
            (reply, first) throws(BeaconError) in
            let reader = ReplyReader(reply, "Observe reply")
            if let overflow = reader.optionalInt("overflow"), overflow > 0 {
                client.report(.notificationsDropped(overflow, patterns: patterns))
            }
            for entry in try reader.array("notifications") {
                deliver(try BeaconNotification(parsing: entry))
            }
            if first { subscribed() }
            return .proceed
        }
    }
}
