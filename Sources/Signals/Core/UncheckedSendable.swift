#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Carries a value across a `@Sendable` boundary.
///
/// Used where the module's own locking makes the hand-over safe: observers and values travel to
/// another thread only through a lock or a serial queue, the way every signal documents it.
@usableFromInline
struct UncheckedSendable<Value>: @unchecked Sendable {
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
