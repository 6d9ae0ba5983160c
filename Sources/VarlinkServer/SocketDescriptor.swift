import CEpoll

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes to a connection's socket without blocking and without `SIGPIPE`: ``VarlinkConnection``'s direct writes
/// and ``SocketTransport``'s held output. Plain system calls, not glibc's cancellation points (see CEpoll).
package enum SocketDescriptor {
    /// Sends `bytes` on the socket `descriptor` without blocking and without `SIGPIPE`; returns how many bytes it
    /// took, or -1 (with `errno`).
    static func send(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int {
        beacon_send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }

    /// Sends the bytes of `vectors`, in order, on the socket `descriptor` without blocking and without `SIGPIPE`;
    /// returns how many bytes it took, or -1 (with `errno`).
    static func send(_ vectors: UnsafeMutableBufferPointer<iovec>, to descriptor: Int32) -> Int {
        var message = msghdr()
        message.msg_iov = vectors.baseAddress
        message.msg_iovlen = vectors.count
        return beacon_sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }
}
