import Dispatch

/// Where an observer is called: at once on the sending thread, or on a `DispatchQueue`.
///
/// Ordering: ``immediate`` keeps the order of each sending thread. A queue context keeps the
/// order in which events were handed to it (a serial queue, such as the main queue, runs them in
/// that order). ``mainActor`` runs on the main queue, isolated to the `MainActor`.
public struct ExecutionContext: Sendable {
    @usableFromInline let run: (@Sendable (@escaping @Sendable () -> Void) -> Void)?

    /// A context that runs `run` to execute each block.
    public init(_ run: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.run = run
    }

    private init(immediate: Void) {
        run = nil
    }

    /// Runs each block at once, on the calling thread.
    public static let immediate = ExecutionContext(immediate: ())

    /// Runs each block asynchronously on `queue`.
    public static func queue(_ queue: DispatchQueue) -> ExecutionContext {
        ExecutionContext { block in queue.async(execute: block) }
    }

    /// Runs each block asynchronously on the main queue.
    public static var main: ExecutionContext { queue(.main) }

    /// Runs each block asynchronously on the main queue, isolated to the `MainActor`.
    public static let mainActor = ExecutionContext { block in
        DispatchQueue.main.async {
            MainActor.assumeIsolated { block() }
        }
    }

    /// Whether blocks run at once on the calling thread.
    public var isImmediate: Bool { run == nil }

    /// Runs `block` in this context.
    @inlinable
    public func execute(_ block: @escaping @Sendable () -> Void) {
        if let run { run(block) } else { block() }
    }
}
