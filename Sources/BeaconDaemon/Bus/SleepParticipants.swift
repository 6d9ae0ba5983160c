import BeaconProtocol
import BeaconSystemd
import Logging

/// The clients running `HoldSleep`, and the sleep being prepared: the daemon holds logind's sleep inhibitor until
/// every participant has answered, or the timeout passes.
struct SleepParticipants {
    /// The bridge that holds the sleep inhibitor; `nil` when the daemon runs without one.
    var bridge: LogindBridge?
    var configuredTimeout: Duration = .seconds(3)
    /// By connection id.
    private(set) var participants: [Int: BusClient] = [:]
    /// Number of the last sleep announced to participants.
    private(set) var round: Int64 = 0
    /// Participants that have not answered the sleep being prepared; `nil` when none is.
    private(set) var pending: Set<Int>?

    /// The effective time participants get: the configured timeout, capped by logind's `InhibitDelayMaxUSec`.
    var timeout: Duration {
        guard let maximum = bridge?.status.inhibitDelayMax else { return configuredTimeout }
        return min(configuredTimeout, maximum)
    }

    func contains(_ id: Int) -> Bool { participants[id] != nil }

    mutating func register(_ client: BusClient) {
        participants[client.connection.id] = client
    }

    /// logind is gone: a sleep in preparation cannot be answered to it.
    mutating func abandonRound() {
        pending = nil
    }

    /// Tells every participant of the coming sleep; releases the inhibitor at once when there are none.
    mutating func beginRound(logger: Logger) {
        round += 1
        pending = Set(participants.keys)
        let timeout = self.timeout
        let timeoutUsec = timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000
        for (id, client) in participants.sorted(by: { $0.key < $1.key }) {
            client.connection.reply(
                [
                    "event": .string("willSleep"), "participant": .int(Int64(id)), "sleep": .int(round),
                    "timeoutUsec": .int(timeoutUsec),
                ],
                continues: true
            )
        }
        logger.info("preparing for sleep", metadata: ["participants": "\(participants.count)", "sleep": "\(round)"])
        if participants.isEmpty {
            pending = nil
            bridge?.releaseSleepInhibitor()
        } else {
            bridge?.beginSleep(participants: participants.count, timeout: timeout)
        }
    }

    /// The system woke up: every participant is told.
    mutating func endRound() {
        pending = nil
        for (id, client) in participants.sorted(by: { $0.key < $1.key }) {
            client.connection.reply(
                ["event": .string("didWake"), "participant": .int(Int64(id)), "sleep": .int(round)],
                continues: true
            )
        }
    }

    /// Participant `id` is ready for the sleep `round` (`nil`: for the current one).
    mutating func release(_ id: Int, round: Int64?, logger: Logger) throws(VarlinkError) {
        guard participants[id] != nil else { throw BusError.noSuchParticipant(Int64(id)) }
        if round == nil || round == self.round {
            answered(id, logger: logger)
        }
    }

    /// A client's connection closed: if it was a participant, it no longer holds sleep back.
    mutating func left(_ id: Int, logger: Logger) {
        guard participants.removeValue(forKey: id) != nil else { return }
        answered(id, logger: logger)
    }

    private mutating func answered(_ id: Int, logger: Logger) {
        guard pending?.remove(id) != nil else { return }
        guard pending?.isEmpty == true else { return }
        pending = nil
        logger.info("sleep participants are ready", metadata: ["sleep": "\(round)"])
        bridge?.releaseSleepInhibitor()
    }
}
