import NIOCore
import NIOPosix

/// Runs every part of a process on one NIO event loop: the gRPC channel to etcd, the connection to beacond, and,
/// as Swift concurrency's global executor, every task and actor. A write then crosses no thread on its way from
/// beacond to etcd and back. Left to the defaults, each message went from an event loop to libdispatch's worker
/// pool and back, and most of beacon-fleet's time went to the kernel switching between them
/// (Fleet/scripts/fleet-bench.sh; the figures are in `docs/guide.md`).
public enum OneEventLoop {
    /// Installs the executor; call it once, from the main thread, before any task starts and before anything uses
    /// NIO's singleton group. Returns false when another executor is installed already.
    public static func install() -> Bool {
        NIOSingletons.groupLoopCountSuggestion = 1
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
