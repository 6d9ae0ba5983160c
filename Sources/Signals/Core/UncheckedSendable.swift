#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Carries a value across a `@Sendable` boundary.
///
/// For the closures the module's API takes as plain (non-`@Sendable`) closures and documents to
/// call on another thread: observers run on the thread that sends (or in the context chosen with
/// ``SignalProtocol/receive(on:)``, which also carries the event there), a ``BlockDisposable``'s
/// action on the thread that disposes it, and an observation tracker's step on its serial queue.
/// State shared between threads goes through ``Locked`` instead, which is `Sendable` only for a
/// `Sendable` state.
@usableFromInline
struct UncheckedSendable<Value>: @unchecked Sendable {
    // Sendable: only for the closures above, which are called where the API documents it.
    @usableFromInline var value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}

/// An identifier of the calling thread, unique among the threads alive at the same time.
@usableFromInline
func currentThreadID() -> UInt {
    #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
    #else
        UInt(pthread_self())
    #endif
}
