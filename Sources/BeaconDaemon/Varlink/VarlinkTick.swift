import NIOCore

/// The end of an event-loop tick, shared by a server's connections: the connections with output to write, and the
/// ``TickStateMachine`` that decides when the service's end-of-tick work and the writes run.
///
/// Used on the server's event loop only.
final class VarlinkTick {
    /// The work and writes of one end of tick.
    struct Hooks {
        /// The service's end-of-tick work: commit, then fan out.
        var serviceWork: () -> Void
        /// Whether the service's pending work is better done once for the whole tick.
        var batches: () -> Bool
    }

    private let eventLoop: any EventLoop
    private var hooks = Hooks(serviceWork: {}, batches: { false })
    // Used for every call; no access spans a call that could reach it again, so the runtime's exclusivity checks
    // are skipped.
    @exclusivity(unchecked) private var machine = TickStateMachine()
    @exclusivity(unchecked) private var queue: [VarlinkConnection] = []

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Set once by the server before the first connection.
    func install(_ hooks: Hooks) {
        self.hooks = hooks
    }

    /// The connections whose output is written at the end of this tick.
    var queuedConnections: [VarlinkConnection] { queue }

    /// `connection` has output to write.
    func outputQueued(on connection: VarlinkConnection) {
        if !connection.isQueuedForFlush {
            connection.isQueuedForFlush = true
            queue.append(connection)
        }
        perform(machine.outputQueued())
    }

    /// The service has work for the end of the tick.
    func workQueued() {
        perform(machine.workQueued())
    }

    func readBurstBegan() {
        machine.readBurstBegan()
    }

    func readBurstEnded() {
        perform(machine.readBurstEnded(batches: machine.state == .waitingForReads && hooks.batches()))
    }

    private func perform(_ action: TickStateMachine.Action) {
        switch action {
        case .none:
            break
        case .runNow:
            run()
        case .runAtEndOfTick:
            eventLoop.assumeIsolated().execute { [self] in run() }
        }
    }

    private func run() {
        machine.endOfTickBegan()
        hooks.serviceWork()
        let next = machine.serviceWorkEnded()
        let connections = queue
        queue.removeAll(keepingCapacity: true)
        perform(next)
        for connection in connections {
            connection.flush()
        }
    }
}
