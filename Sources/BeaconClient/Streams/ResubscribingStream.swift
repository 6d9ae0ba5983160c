import BeaconProtocol
import Synchronization

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
    ///
    /// `handle` runs on the stream connection's event loop, as each reply arrives: it must not block.
    func runResubscribing(
        method: String,
        parameters: @Sendable () -> [String: JSONValue],
        handle: @escaping @Sendable (_ reply: [String: JSONValue], _ first: Bool) throws(BeaconError) -> StreamDirective
    ) async -> BeaconError? {
        await runResubscribing(
            method: method, parameters: parameters, decode: StreamSubscription.plainReplies, handle: handle)
    }

    /// ``runResubscribing(method:parameters:handle:)`` with replies read by `decode`.
    func runResubscribing<Reply: Sendable>(
        method: String,
        parameters: @Sendable () -> [String: JSONValue],
        decode: @escaping StreamSubscription<Reply>.Decode,
        handle: @escaping @Sendable (_ reply: Reply, _ first: Bool) throws(BeaconError) -> StreamDirective
    ) async -> BeaconError? {
        var attempt = 0
        while !Task.isCancelled {
            var failure: BeaconError?
            var resubscribeAtOnce = false
            do throws(BeaconError) {
                let connection = try await openStreamConnection()
                defer { closeStreamConnection(connection) }
                let parameters = parameters()
                let outcome = await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<SubscriptionOutcome, Never>) in
                        let end = SubscriptionEnd(continuation)
                        connection.stream(method, parameters, decode: decode) { event in
                            guard !end.isDone else { return }
                            switch event {
                            case .reply(let reply, let first, let last):
                                end.replied()
                                do throws(BeaconError) {
                                    if case .resubscribe = try handle(reply, first) {
                                        end.resubscribe()
                                    } else if last {
                                        end.finish(nil)
                                    }
                                } catch {
                                    end.finish(error)
                                }
                            case .failed(let error):
                                end.finish(error)
                            }
                        }
                    }
                } onCancel: {
                    connection.close()
                }
                switch outcome {
                case .resubscribe:
                    attempt = 0
                    resubscribeAtOnce = true
                case .ended(let error, let replied):
                    if replied { attempt = 0 }
                    failure = error
                }
            } catch {
                failure = error
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

/// How one subscription of a resubscribing stream ended.
private enum SubscriptionOutcome: Sendable {
    /// The handler asked for a new subscription.
    case resubscribe
    /// The call ended: normally (`nil`), with the daemon's error, the handler's, or a closed connection; `replied`
    /// when at least one reply had come.
    case ended(BeaconError?, replied: Bool)
}

/// Ends the wait for one subscription once, with the first outcome; later events are ignored.
private final class SubscriptionEnd: Sendable {
    private let continuation: CheckedContinuation<SubscriptionOutcome, Never>
    private let done = Atomic<Bool>(false)
    private let anyReply = Atomic<Bool>(false)

    init(_ continuation: CheckedContinuation<SubscriptionOutcome, Never>) {
        self.continuation = continuation
    }

    var isDone: Bool { done.load(ordering: .acquiring) }

    func replied() { anyReply.store(true, ordering: .relaxed) }

    /// Ends the wait with ``SubscriptionOutcome/resubscribe``.
    func resubscribe() {
        guard markDone() else { return }
        continuation.resume(returning: .resubscribe)
    }

    /// Ends the wait with ``SubscriptionOutcome/ended(_:replied:)``: the call ended normally (`nil`) or with `error`.
    func finish(_ error: BeaconError?) {
        guard markDone() else { return }
        continuation.resume(returning: .ended(error, replied: anyReply.load(ordering: .relaxed)))
    }

    /// Whether this call ends the wait: `false` when an earlier outcome did.
    private func markDone() -> Bool {
        !done.exchange(true, ordering: .acquiringAndReleasing)
    }
}
