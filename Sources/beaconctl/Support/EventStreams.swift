import BeaconBlockingClient
import BeaconProtocol

/// One event of a Watch or Observe stream.
enum BusEvent {
    /// A `Change` of `io.beacon.Properties.Watch`.
    case change([String: JSONValue])
    /// A `Notification` of `io.beacon.Notifications.Observe`.
    case notification([String: JSONValue])
}

/// Watch and Observe streams, each on its own connection, read together.
///
/// ``subscribe(_:_:)`` sends a streamed call and returns its first reply (the daemon sends it once the
/// subscription is registered); ``next(deadline:)`` returns the events of the next reply of any stream.
final class EventStreams {
    enum Kind {
        case properties, notifications
    }

    private let daemon: Daemon
    private var connections: [BlockingVarlinkConnection] = []
    private var kinds: [Kind] = []

    init(daemon: Daemon) {
        self.daemon = daemon
    }

    /// Starts `io.beacon.Properties.Watch` or `io.beacon.Notifications.Observe` with `parameters` and returns the
    /// events of its first reply. Connecting and the first reply are bounded by the reply timeout.
    func subscribe(_ kind: Kind, _ parameters: [String: JSONValue]) throws -> [BusEvent] {
        let method =
            kind == .properties ? IOBeaconProperties.Watch.method : IOBeaconNotifications.Observe.method
        let connection = try daemon.connect(timeout: daemon.replyTimeout)
        let deadline = BlockingDeadline(timeout: daemon.replyTimeout)
        let reply: VarlinkReply
        do {
            try connection.send(VarlinkCall(method: method, parameters: parameters, more: true), deadline: deadline)
            reply = try connection.receive(deadline: deadline)
        } catch {
            throw daemon.failure(error)
        }
        connections.append(connection)
        kinds.append(kind)
        return try events(of: reply, kind: kind)
    }

    /// The events of the next reply of any stream; `nil` when `deadline` passes first.
    func next(deadline: BlockingDeadline) throws -> [BusEvent]? {
        do {
            guard let index = try BlockingVarlinkConnection.waitForReply(on: connections, deadline: deadline) else {
                return nil
            }
            let reply = try connections[index].receive(deadline: deadline)
            return try events(of: reply, kind: kinds[index])
        } catch let error as BlockingVarlinkError {
            throw daemon.failure(error)
        }
    }

    private func events(of reply: VarlinkReply, kind: Kind) throws -> [BusEvent] {
        if let error = reply.varlinkError { throw daemon.failure(BlockingVarlinkError(remote: error)) }
        guard reply.continues else {
            throw CommandFailure(.connectionLost, "\(daemon.address): the daemon ended the stream")
        }
        let parameters = reply.parameters
        if let overflow = parameters["overflow"]?.intValue, overflow > 0 {
            let what = kind == .properties ? "changes were coalesced" : "notifications were dropped"
            OutputBuffer.standardError("beaconctl: \(overflow) \(what): output is read too slowly")
        }
        if parameters["resync"]?.boolValue == true {
            OutputBuffer.standardError(
                "beaconctl: the version given to --since is too old: what follows are all current values")
        }
        switch kind {
        case .properties:
            return (parameters["changes"]?.arrayValue ?? []).compactMap { $0.objectValue.map(BusEvent.change) }
        case .notifications:
            return (parameters["notifications"]?.arrayValue ?? []).compactMap {
                $0.objectValue.map(BusEvent.notification)
            }
        }
    }
}
