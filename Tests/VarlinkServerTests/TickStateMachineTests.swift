import Testing

@testable import VarlinkServer

@Suite("TickStateMachine: when the end of tick runs")
struct TickStateMachineTests {
    @Test("output outside a read burst runs at the end of the tick, once")
    func outsideBurst() {
        var machine = TickStateMachine()
        #expect(machine.outputQueued() == .runAtEndOfTick)
        #expect(machine.outputQueued() == .none)
        #expect(machine.workQueued() == .none)
        machine.endOfTickBegan()
        #expect(machine.serviceWorkEnded() == .none)
        #expect(machine.state == .idle)
    }

    @Test("output during read bursts waits for the last burst, then runs at once unless the service batches")
    func duringBursts() {
        var machine = TickStateMachine()
        machine.readBurstBegan()
        machine.readBurstBegan()
        #expect(machine.outputQueued() == .none)
        #expect(machine.state == .waitingForReads)
        #expect(machine.readBurstEnded(batches: false) == .none)
        #expect(machine.readBurstEnded(batches: false) == .runNow)

        var batching = TickStateMachine()
        batching.readBurstBegan()
        #expect(batching.workQueued() == .none)
        #expect(batching.readBurstEnded(batches: true) == .runAtEndOfTick)
        #expect(batching.state == .scheduled)
    }

    @Test("a burst that queued nothing runs nothing")
    func emptyBurst() {
        var machine = TickStateMachine()
        machine.readBurstBegan()
        #expect(machine.readBurstEnded(batches: true) == .none)
        #expect(machine.state == .idle)
    }

    @Test("work queued while the service's work runs runs once more in the next tick; output queued then does not")
    func workDuringRun() {
        var machine = TickStateMachine()
        #expect(machine.workQueued() == .runAtEndOfTick)
        machine.endOfTickBegan()
        #expect(machine.outputQueued() == .none)
        #expect(machine.serviceWorkEnded() == .none)

        #expect(machine.workQueued() == .runAtEndOfTick)
        machine.endOfTickBegan()
        #expect(machine.workQueued() == .none)
        #expect(machine.workQueued() == .none)
        #expect(machine.serviceWorkEnded() == .runAtEndOfTick)
        #expect(machine.state == .scheduled)

        // Queued again while a channel reads: it waits for the burst.
        machine.endOfTickBegan()
        #expect(machine.workQueued() == .none)
        machine.readBurstBegan()
        #expect(machine.serviceWorkEnded() == .none)
        #expect(machine.state == .waitingForReads)
        #expect(machine.readBurstEnded(batches: false) == .runNow)
    }
}
