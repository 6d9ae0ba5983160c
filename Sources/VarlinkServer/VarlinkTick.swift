import NIOCore

/// The end of an event-loop tick, shared by a server's connections: the connections with output to write, and the
/// ``TickStateMachine`` that decides when the service's end-of-tick work and the writes run.
///
/// Used on the server's event loop only. The service's part of the end of tick is what a subclass
/// (``ServiceTick``) overrides: the connections see only this class.
@usableFromInline
package class VarlinkTick {
    private let eventLoop: any EventLoop
    // Used for every call; no access spans a call that could reach it again, so the runtime's exclusivity checks are
    // skipped. VarlinkServer's `@exclusivity(unchecked)` properties (this file's and those of the module's other files)
    // save a Get 2,458 instructions in a release build without `-enforce-exclusivity=unchecked` (as a package that
    // depends on this one builds it): 7,202 -> 4,744, notification 1->1 5,906 -> 5,435, pipelined Set 9,911 -> 9,113
    // (scripts/callgrind-ops.sh, Benchmarks/Bus/results/2026-11-28-exclusivity-audit.txt).
    @exclusivity(unchecked) private var machine = TickStateMachine()
    @exclusivity(unchecked) private var queue: [VarlinkConnection] = []
    /// An empty array with room, which the next end of tick makes the queue: every tick would otherwise allocate a
    /// new queue, as the one it flushes is still held while the next fills.
    @exclusivity(unchecked) private var spare: [VarlinkConnection] = []

    /// Called once, at the end of the next tick that writes to a connection, then cleared.
    @exclusivity(unchecked) var afterWrites: (() -> Void)?

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// The service's end-of-tick work: commit, then fan out.
    func serviceWork() {}

    /// Whether the service's pending work is better done once for the whole tick.
    var serviceBatches: Bool { false }

    /// The connections whose output is written at the end of this tick.
    package final var queuedConnections: [VarlinkConnection] { queue }

    /// `connection` has output to write.
    @usableFromInline
    final func outputQueued(on connection: VarlinkConnection) {
        if !connection.state.isQueuedForFlush {
            connection.state.isQueuedForFlush = true
            queue.append(connection)
        }
        perform(machine.outputQueued())
    }

    /// The service has work for the end of the tick.
    final func workQueued() {
        perform(machine.workQueued())
    }

    final func readBurstBegan() {
        machine.readBurstBegan()
    }

    final func readBurstEnded() {
        perform(machine.readBurstEnded(batches: machine.isWaitingForReads && serviceBatches))
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
        serviceWork()
        let next = machine.serviceWorkEnded()
        var connections: [VarlinkConnection] = []
        swap(&connections, &spare)
        swap(&connections, &queue)
        perform(next)
        for connection in connections {
            connection.flush()
        }
        if let afterWrites, !connections.isEmpty {
            self.afterWrites = nil
            afterWrites()
        }
        // Element by element: `removeAll(keepingCapacity:)` takes a generic path, several times dearer for the one
        // connection of most ticks.
        while !connections.isEmpty { connections.removeLast() }
        spare = connections
    }
}

/// The end of tick of a server of `Service`.
package final class ServiceTick<Service: VarlinkService>: VarlinkTick {
    /// The server's core owns both the service and this tick, and outlives every end of tick. Unmanaged, so that a
    /// call retains and releases nothing.
    private let service: Unmanaged<Service>

    init(eventLoop: any EventLoop, service: Service) {
        self.service = .passUnretained(service)
        super.init(eventLoop: eventLoop)
    }

    override func serviceWork() {
        service._withUnsafeGuaranteedRef { $0.tickEnded() }
    }

    override var serviceBatches: Bool { service._withUnsafeGuaranteedRef { $0.batchesAtEndOfTick } }
}
