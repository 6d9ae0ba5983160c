#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes to a connection's socket without blocking and without `SIGPIPE`: ``VarlinkConnection``'s direct writes
/// and ``SocketTransport``'s held output.
package enum SocketDescriptor {
    /// Sends `bytes` on the socket `descriptor` without blocking and without `SIGPIPE`; returns how many bytes it
    /// took, or -1 (with `errno`).
    static func send(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int {
        #if canImport(Glibc)
            Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        #else
            Musl.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        #endif
    }

    /// Sends the bytes of `vectors`, in order, on the socket `descriptor` without blocking and without `SIGPIPE`;
    /// returns how many bytes it took, or -1 (with `errno`).
    static func send(_ vectors: UnsafeMutableBufferPointer<iovec>, to descriptor: Int32) -> Int {
        var message = msghdr()
        message.msg_iov = vectors.baseAddress
        message.msg_iovlen = vectors.count
        return sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }
}
