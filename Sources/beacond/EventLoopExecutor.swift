import CConcurrencyHook
import NIOCore
import NIOPosix

/// Makes NIO's singleton event loop group the global executor of Swift concurrency, so that tasks run on the
/// daemon's event loop rather than on libdispatch's worker pool, whose monitor wakes the process every second once
/// the pool has been used.
enum EventLoopExecutor {
    /// The runtime's hook: the job, and the enqueue function it replaces.
    typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the executor; call it once, from the main thread, before any task starts. Returns false when
    /// another hook is installed already.
    static func install() -> Bool {
        // NIO looks the hook up with dlsym, which finds it when the standard library is a shared library.
        if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() { return true }
        // Linked statically, the hook is a hidden symbol of the executable: the linker resolved it for us.
        guard let slot = beacon_concurrency_enqueue_global_hook(), slot.pointee == nil else { return false }
        return withUnsafeTemporaryAllocation(of: EnqueueHook.self, capacity: 1) { hook in
            hook.baseAddress!.initialize(to: { job, _ in
                MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(job))
            })
            hook.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) {
                slot.pointee = $0.pointee
            }
            return true
        }
    }
}
