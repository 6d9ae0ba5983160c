import BeaconDaemon
import CConcurrencyHook
import NIOCore

/// Makes the daemon's event loop (``DaemonEventLoop``) the global executor of Swift concurrency, so that tasks run on
/// it rather than on libdispatch's worker pool, whose monitor wakes the process every second once the pool has been
/// used.
enum EventLoopExecutor {
    /// The runtime's hook: the job, and the enqueue function it replaces.
    typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the executor; call it once, from the main thread, before any task starts. Returns false when
    /// another hook is installed already.
    static func install() -> Bool {
        // Found by the linker, in the shared library or, linked statically, as a hidden symbol of the executable.
        guard let slot = beacon_concurrency_enqueue_global_hook(), slot.pointee == nil else { return false }
        return withUnsafeTemporaryAllocation(of: EnqueueHook.self, capacity: 1) { hook in
            hook.baseAddress!.initialize(to: { job, _ in
                DaemonEventLoop.shared.enqueue(ExecutorJob(job))
            })
            hook.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) {
                slot.pointee = $0.pointee
            }
            return true
        }
    }
}
