import BeaconProtocol
import Logging
import VarlinkServer

/// The tick's transaction, shared by the bus and its services: the table's changes and the store's writes
/// (``PropertyTable``, ``StoreWriter``), the events to fan out (``FanOut``), the streams begun, and the request for
/// an end of tick.
///
/// The services change the table and queue events here, and ask for the end of the tick; at the end of the tick
/// (``BeaconBus/tickEnded()``) the transaction commits the writes, then fans the events out
/// (``commitAndPublish()``), or the bus undoes the tick when the commit fails.
final class BusTransaction {
    let writer: StoreWriter
    let table: PropertyTable
    let fanOut: FanOut
    /// Where a failing store is reported.
    let status: DaemonStatus
    let logger: Logger
    private(set) var server: VarlinkServerContext?
    /// Clients that began a stream in this tick: a failed commit ends their streams again.
    var streams: [BusClient] = []
    /// ``requestEndOfTick()`` asked the server for an end of tick that has not begun yet.
    var endRequested = false

    init(writer: StoreWriter, table: PropertyTable, fanOut: FanOut, status: DaemonStatus, logger: Logger) {
        self.writer = writer
        self.table = table
        self.fanOut = fanOut
        self.status = status
        self.logger = logger
    }

    func attached(to server: VarlinkServerContext) {
        self.server = server
        fanOut.budget = server.budget
    }

    /// Has ``BeaconBus/tickEnded()`` run at the end of this tick; asks the server once per tick.
    func requestEndOfTick() {
        guard !endRequested else { return }
        endRequested = true
        server?.scheduleEndOfTick()
    }

    /// A client began a Watch, Observe or HoldSleep in this tick.
    func streamBegan(_ client: BusClient) {
        streams.append(client)
        requestEndOfTick()
    }

    /// What a subscription's index entries cost, charged to its uid: about 512 bytes a pattern besides its text.
    static func cost(of patterns: [KeyPattern]) -> Int {
        patterns.reduce(0) { $0 + 512 + $1.rawValue.utf8.count }
    }

    /// Starts `subscription`, or fails (and closes the connection after the error) when its uid's budget cannot
    /// take it.
    func subscribe(_ subscription: Subscription) throws(VarlinkError) {
        let client = subscription.client
        let cost = Self.cost(of: subscription.patterns)
        if let budget = server?.budget {
            guard budget.charge(cost, to: client.connection.credentials.uid) else {
                client.connection.close()
                throw BusError.limitExceeded("maxBytesPerUid", maximum: budget.limit)
            }
            client.chargedBytes = cost
        }
        fanOut.add(subscription)
        client.subscription = subscription
        streamBegan(client)
    }

    // MARK: Commit

    /// Whether the end of the tick has store writes or events to handle.
    var hasWork: Bool { writer.hasPending || fanOut.hasEvents }

    /// Commits the tick's store writes, then delivers its events; returns the commit's error when it failed (the
    /// tick is then to be undone: ``undo(after:)``). Delivering can close connections (slow subscribers), whose
    /// ephemeral properties then go away with new events: those are committed and delivered in the same tick.
    func commitAndPublish() -> (any Error)? {
        // A tick of reads only (a Get, say) has nothing to commit or deliver.
        guard writer.hasPending || fanOut.hasEvents || !streams.isEmpty || table.hasUncommittedChanges else {
            return nil
        }
        for _ in 0..<8 {
            let writes = writer.hasPending
            do {
                try writer.commit()
            } catch {
                return error
            }
            if writes { recordMarker() }
            if writes, let failure = status.storeFailure {
                status.storeFailure = nil
                logger.notice(
                    "the store takes writes again",
                    metadata: ["failingSinceUsec": "\(failure.sinceUsec)", "lastError": "\(failure.reason)"])
            }
            table.committed()
            if !streams.isEmpty { streams.removeAll(keepingCapacity: true) }
            guard fanOut.hasEvents else { return nil }
            fanOut.publish()
        }
        requestEndOfTick()
        return nil
    }

    /// The commit failed with `error`: the table's changes of the tick are undone and its events dropped. Logged
    /// when the store starts failing and when it recovers, not at every failed tick.
    func undo(after error: any Error) {
        if status.storeFailure == nil {
            logger.error(
                "store commit failed; writes fail until it succeeds again: \(error)",
                metadata: ["operations": "\(writer.pending.count)"])
        }
        status.storeFailure = (status.storeFailure?.sinceUsec ?? WallClock.nowUsec(), "\(error)")
        table.rollBack()
        fanOut.discardTick()
    }

    /// Writes the ceiling and the highest stored version to the marker after a commit.
    func recordMarker() {
        guard let marker = writer.marker else { return }
        let contents = VersionMarker.Contents(
            ceiling: table.versionCeiling, stored: writer.storedVersion, storedKey: writer.storedKey)
        if !marker.record(contents) {
            logger.error("cannot write the version marker", metadata: ["marker": "\(marker.path)"])
        }
    }
}
