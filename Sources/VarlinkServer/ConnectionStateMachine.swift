import NIOCore

/// What one admitted connection of a server is doing, as one value whose transitions return what to do: the call
/// being answered (streamed, deferred, oneway), the calls of this tick whose replies may still be taken back, the
/// output (open, closing once written, closed), the input (read, paused for output or for a deferred reply,
/// stopped), what is charged to the peer's uid, and the message left unfinished.
///
/// ``VarlinkConnection`` holds it; its ``VarlinkReader`` (the input side), the connection's writes and the server's
/// core make the transitions and carry out what they return: the machine itself does no I/O, touches no budget and
/// schedules nothing, so every rule of the connection's life is read here, in one place, and tested as a value
/// (`ConnectionStateMachineTests`). Used on the server's event loop only.
@usableFromInline
struct ConnectionStateMachine {
    /// The connection's output.
    @usableFromInline
    enum Output: Equatable {
        case open
        /// Closes once its queued output is written (``VarlinkConnection/close()``): no further call is handled.
        case closingAfterFlush
        case closed
    }

    /// Why the connection's calls wait, unread.
    struct Pauses: OptionSet {
        let rawValue: UInt8
        /// The peer does not take its output: its calls wait until the output drains.
        static let output = Pauses(rawValue: 1)
        /// A call waits for its deferred reply (``VarlinkConnection/deferReply()``): replies keep the calls' order.
        static let reply = Pauses(rawValue: 2)
    }

    /// A change of what is charged to the peer's uid.
    enum Charge: Equatable {
        case none
        /// Give back this many bytes; already taken off the machine's count.
        case release(Int)
        /// Charge this many more bytes; confirmed with ``inputCharged(_:)`` or ``outputCharged(_:)`` when the
        /// uid's budget takes them.
        case charge(Int)
    }

    /// What to do when the timer of an unfinished message fires.
    enum FrameTimerAction: Equatable {
        case none
        /// The message it was armed for completed and another is unfinished: arm again, for that one.
        case rearm(since: NIODeadline)
        /// The message is still unfinished: the connection fails.
        case fail
    }

    // The fields are read for every call; `VarlinkConnection` keeps the machine `@exclusivity(unchecked)`.

    /// A streamed call is running: until it ends, calls other than oneway ones break the protocol.
    @usableFromInline private(set) var isStreaming = false
    /// The call being answered is oneway: its replies are dropped.
    @usableFromInline private(set) var discardsReplies = false
    /// The call being answered, or one before it, is answered later: no further call is handled until it is.
    @usableFromInline private(set) var awaitsDeferredReply = false
    /// Calls that expect a reply, answered since the output was last written; their replies start at
    /// ``tickReplyStart`` of the connection's output and can be taken back (``takeBackCallsOfThisTick()``).
    @usableFromInline private(set) var tickCalls = 0
    @usableFromInline private(set) var tickReplyStart = 0
    @usableFromInline private(set) var output = Output.open
    /// The connection is in the tick's list of connections to write.
    @usableFromInline var isQueuedForFlush = false
    /// The transport was handed output it may not have written yet: a direct write waits until it has.
    var transportMayHoldOutput = false
    /// No more input is taken: a malformed message or a limit failed the connection, or the transport closed.
    private(set) var inputStopped = false
    private(set) var pauses: Pauses = []
    /// Bytes of unread input charged to the peer's uid.
    private(set) var chargedInput = 0
    /// Output charged to the peer's uid while the connection is not writable.
    private(set) var chargedOutput = 0
    /// When the message at the start of the unread input began, while it is unfinished.
    private(set) var unfinishedSince: NIODeadline?

    @usableFromInline
    init() {}

    // MARK: Calls

    @usableFromInline
    var isClosed: Bool { output == .closed }

    /// A failure, or a close, means no further call is handled.
    var isClosing: Bool { output != .open }

    /// Whether a call may be handled now; a call that is not oneway during a stream breaks the protocol.
    @inlinable
    func admitsCall(oneway: Bool) -> Bool {
        !isStreaming || oneway
    }

    /// A call is about to be handled, its replies starting at `outputCount` bytes of output: a call that expects
    /// a reply is counted, so that the reply can be taken back; a oneway call's replies are dropped.
    @inlinable
    mutating func callBegins(oneway: Bool, outputCount: Int) {
        discardsReplies = oneway
        guard !oneway else { return }
        if tickCalls == 0 { tickReplyStart = outputCount }
        tickCalls += 1
    }

    /// The call begun with ``callBegins(oneway:outputCount:)`` was not handled after all: it is again once parsed.
    @inlinable
    mutating func callNotHandled(oneway: Bool) {
        discardsReplies = false
        if !oneway { tickCalls -= 1 }
    }

    /// The handler of the call returned.
    @inlinable
    mutating func callHandled() {
        discardsReplies = false
    }

    /// A reply is about to be queued; returns false when it is dropped (a oneway call's). A reply with
    /// `continuing` begins or continues a stream; one without, or an error, ends it.
    @inlinable
    mutating func replies(continuing: Bool) -> Bool {
        guard !discardsReplies else { return false }
        isStreaming = continuing
        return true
    }

    /// The call's first reply went out encoded by the service, with `continues`: the call is streamed.
    mutating func streamBegins() {
        guard !discardsReplies else { return }
        isStreaming = true
    }

    /// The stream's last reply was sent encoded by the service.
    mutating func streamEnds() {
        isStreaming = false
    }

    /// The call being answered is answered later; returns whether a reply is awaited, which a oneway call does not
    /// expect. It no longer counts among this tick's calls.
    mutating func deferReply() -> Bool {
        guard !discardsReplies, !isClosed else { return false }
        tickCalls -= 1
        awaitsDeferredReply = true
        return true
    }

    /// The deferred reply is about to be sent, at `outputCount` bytes of output; returns false when no reply was
    /// deferred. The call counts among this tick's again: a failed commit of the tick answers it with its error.
    mutating func deferredReplyBegins(outputCount: Int) -> Bool {
        guard awaitsDeferredReply else { return false }
        awaitsDeferredReply = false
        callBegins(oneway: false, outputCount: outputCount)
        return true
    }

    /// The deferred reply was sent; returns whether the input, paused for it, resumes.
    func deferredReplySent() -> Bool {
        pauses.contains(.reply)
    }

    /// The replies of this tick's calls are taken back, to be replaced by one error each: returns how many calls
    /// and where their replies start in the output, or nil when there are none (or the connection is closed).
    mutating func takeBackCallsOfThisTick() -> (calls: Int, replyStart: Int)? {
        guard tickCalls > 0, !isClosed else { return nil }
        defer {
            tickCalls = 0
            isStreaming = false
        }
        discardsReplies = false
        return (tickCalls, tickReplyStart)
    }

    /// A protocol violation: the connection replies (or not) and closes; returns false when it already failed or
    /// is closing, and nothing more is said.
    mutating func violation() -> Bool {
        guard output == .open else { return false }
        discardsReplies = false
        return true
    }

    // MARK: Output

    /// Output was handed to the transport or written: it can no longer be taken back.
    @inlinable
    mutating func outputWritten() {
        tickCalls = 0
    }

    /// ``VarlinkConnection/close()``: returns whether the connection is to be flushed, which then closes it.
    mutating func closeRequested() -> Bool {
        guard output != .closed else { return false }
        output = .closingAfterFlush
        return true
    }

    /// The connection closed, or is closed at once (``VarlinkConnection/abort()``), its output dropped.
    mutating func closed() {
        output = .closed
        transportMayHoldOutput = false
    }

    /// A flush wrote what was queued: returns whether the input, paused for output, resumes, which it does when
    /// the peer takes its output again.
    func flushed(writable: @autoclosure () -> Bool) -> Bool {
        pauses.contains(.output) && output != .closed && writable()
    }

    // MARK: Input

    /// Whether the reader takes more input.
    var readsInput: Bool { !inputStopped && output != .closed }

    /// Stops the input: a malformed message or a limit failed the connection. Returns the bytes to give back to
    /// the uid.
    mutating func stopInput() -> Int {
        inputStopped = true
        unfinishedSince = nil
        defer { chargedInput = 0 }
        return chargedInput
    }

    /// The transport closed: returns what to give back to the uid, of the input and of the output.
    mutating func transportClosed() -> (input: Int, output: Int) {
        let charged = (chargedInput, chargedOutput)
        inputStopped = true
        pauses = []
        unfinishedSince = nil
        chargedInput = 0
        chargedOutput = 0
        return charged
    }

    /// The calls must wait for `reason`; returns whether the transport stops reading (it has not already).
    mutating func pause(for reason: Pauses) -> Bool {
        guard !pauses.contains(reason) else { return false }
        pauses.insert(reason)
        return true
    }

    /// `reason` passed; returns whether the calls that waited are handled now.
    mutating func resume(after reason: Pauses) -> Bool {
        guard pauses.contains(reason), output != .closed else { return false }
        pauses.remove(reason)
        return true
    }

    /// Whether the transport reads, with the output `writable`: a peer that does not read its replies is not read
    /// from either, nor one whose calls wait for a deferred reply.
    func reads(writable: Bool) -> Bool {
        writable && pauses.isEmpty
    }

    /// The message at the start of the input is unfinished; if it was not before, it began `now`. A timer fails
    /// the connection when it stays so for the server's frame timeout (``frameTimerFired(armedFor:)``).
    mutating func frameUnfinished(at now: @autoclosure () -> NIODeadline) {
        if unfinishedSince == nil { unfinishedSince = now() }
    }

    /// The message at the start of the input is complete.
    mutating func frameCompleted() {
        if unfinishedSince != nil { unfinishedSince = nil }
    }

    /// The timer armed for the message unfinished `since` fired.
    func frameTimerFired(armedFor since: NIODeadline) -> FrameTimerAction {
        guard let unfinished = unfinishedSince, !inputStopped, output == .open else { return .none }
        return unfinished == since ? .fail : .rearm(since: unfinished)
    }

    /// `held` bytes of input wait unread: returns the change of what is charged to the uid for them.
    mutating func inputHeld(_ held: Int) -> Charge {
        guard held != chargedInput, !isClosed else { return .none }
        if held < chargedInput {
            defer { chargedInput = held }
            return .release(chargedInput - held)
        }
        return .charge(held - chargedInput)
    }

    /// The uid's budget took `bytes` more of input.
    mutating func inputCharged(_ bytes: Int) {
        chargedInput += bytes
    }

    /// The output is held (the connection is not writable) or not any more: returns the change of what is charged
    /// to the uid, `bytes` while it is held.
    mutating func outputHeld(_ held: Bool, bytes: Int) -> Charge {
        guard held != (chargedOutput > 0) else { return .none }
        guard held else {
            defer { chargedOutput = 0 }
            return .release(chargedOutput)
        }
        return .charge(bytes)
    }

    /// The uid's budget took `bytes` for the held output.
    mutating func outputCharged(_ bytes: Int) {
        chargedOutput = bytes
    }
}
