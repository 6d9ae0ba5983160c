/// Decides when a server runs its service's end-of-tick work (committing and fanning out) and writes the output
/// that its connections queued: one value whose transitions return what to do, instead of flags spread over the
/// server's classes.
///
/// The rules:
/// - Output or work queued outside a read burst is handled at the end of the event-loop tick.
/// - Output or work queued during a read burst (from a channel's first read to its read-complete) waits for every
///   burst of that tick to end. Then it is handled at once, or, when the service batches (its store writes and
///   events are better done once for every channel read in the tick), at the end of the tick.
/// - Work queued while the service's end-of-tick work runs is handled once more, in the next tick; output queued
///   then is written with the tick's output.
struct TickStateMachine {
    /// What the server does after a transition.
    enum Action: Equatable {
        case none
        /// Run the end of tick now.
        case runNow
        /// Run the end of tick in a task at the end of this event-loop tick.
        case runAtEndOfTick
    }

    enum State: Equatable {
        /// Nothing is queued.
        case idle
        /// Something is queued during a read burst: the end of tick runs when every burst has ended.
        case waitingForReads
        /// A task at the end of the event-loop tick runs the end of tick.
        case scheduled
        /// The service's end-of-tick work is running; `again` when it queued more work for the next tick.
        case running(again: Bool)
    }

    private(set) var state = State.idle
    /// Channels in a read burst.
    private(set) var readingChannels = 0

    /// Whether the end of tick waits for the read bursts in progress.
    var isWaitingForReads: Bool {
        if case .waitingForReads = state { return true }
        return false
    }

    /// A connection queued output.
    mutating func outputQueued() -> Action {
        guard case .idle = state else { return .none }
        return schedule()
    }

    /// The service has work for the end of the tick.
    mutating func workQueued() -> Action {
        switch state {
        case .idle:
            return schedule()
        case .running:
            state = .running(again: true)
            return .none
        case .waitingForReads, .scheduled:
            return .none
        }
    }

    mutating func readBurstBegan() {
        readingChannels += 1
    }

    /// `batches`: whether the service's pending work is better done once for the whole tick.
    mutating func readBurstEnded(batches: Bool) -> Action {
        readingChannels -= 1
        guard readingChannels == 0, case .waitingForReads = state else { return .none }
        if batches {
            state = .scheduled
            return .runAtEndOfTick
        }
        return .runNow
    }

    /// The end of tick starts: the service's work runs now.
    mutating func endOfTickBegan() {
        state = .running(again: false)
    }

    /// The service's work is done; the queued output is written next. Returns what to do about work queued during
    /// it.
    mutating func serviceWorkEnded() -> Action {
        guard case .running(let again) = state else { return .none }
        state = .idle
        return again ? schedule() : .none
    }

    private mutating func schedule() -> Action {
        if readingChannels > 0 {
            state = .waitingForReads
            return .none
        }
        state = .scheduled
        return .runAtEndOfTick
    }
}
