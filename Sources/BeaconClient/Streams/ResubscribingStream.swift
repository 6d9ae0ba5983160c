import BeaconProtocol

/// What the reply handler of a resubscribing stream asks for.
enum StreamDirective: Sendable {
    case proceed
    /// Drop this subscription and subscribe again at once (the parameters are asked for anew).
    case resubscribe
}

extension BeaconClient {
    /// Runs a streamed call on a connection of its own and keeps it running: when the connection closes or
    /// cannot be made, it waits with the backoff of ``Options/reconnect`` and calls again, with the
    /// parameters `parameters` returns then.
    ///
    /// `handle` gets each reply and whether it is the first of a subscription. Returns when the task is
    /// cancelled (`nil`), when the daemon answers with an error (that error: it would answer the same again), when
    /// `handle` throws, or when the client is closed.
    func runResubscribing(
        method: String,
        parameters: @Sendable () -> [String: JSONValue],
        handle: @Sendable (_ reply: [String: JSONValue], _ first: Bool) throws(BeaconError) -> StreamDirective
    ) async -> BeaconError? {
        var attempt = 0
        while !Task.isCancelled {
            var failure: BeaconError?
            var resubscribeAtOnce = false
            do {
                let connection = try await openStreamConnection()
                defer { closeStreamConnection(connection) }
                var first = true
                for try await reply in connection.stream(method, parameters()) {
                    let directive = try handle(reply, first)
                    first = false
                    attempt = 0
                    if case .resubscribe = directive {
                        resubscribeAtOnce = true
                        break
                    }
                }
            } catch {
                failure = .wrapping(error)
            }
            if Task.isCancelled { return nil }
            if let failure {
                switch failure.code {
                case .notConnected, .connectionClosed, .connectionFailed:
                    break
                default:
                    return failure
                }
            }
            if link.isClosed { return .clientClosed }
            if resubscribeAtOnce { continue }
            do {
                try await Task.sleep(for: options.reconnect.delay(forAttempt: attempt))
            } catch {
                return nil
            }
            attempt += 1
        }
        return nil
    }
}
