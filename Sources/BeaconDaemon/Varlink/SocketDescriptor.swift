import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The file descriptor of a connected socket channel, so that a connection's replies can be written to the socket
/// without SwiftNIO's write path (``VarlinkConnection``'s direct writes).
///
/// SwiftNIO does not publish a channel's descriptor. Its socket channels name it in their description
/// (`fd=N`), and the number read there is used only when the kernel's cookie of that descriptor (`SO_COOKIE`, unique
/// for the socket for as long as the system runs) is the cookie that SwiftNIO's own `getsockopt` on the channel
/// returns. A description in another form, or a descriptor that is not the channel's, leaves the connection on
/// SwiftNIO's write path: it never writes to the wrong socket.
package enum SocketDescriptor {
    /// The descriptor of `channel`'s socket, when it is found and verified; `nil` otherwise. Completes at once on
    /// the channel's event loop.
    static func of(_ channel: any Channel) -> EventLoopFuture<Int32?> {
        // `description` itself: `String(describing:)` first asks the runtime about other protocols, each a search
        // of every conformance in the process the first time.
        guard let provider = channel as? any SocketOptionProvider,
            let describing = channel as? any CustomStringConvertible,
            let descriptor = number(in: describing.description)
        else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_COOKIE)
        )
        return cookie.map { expected in
            self.cookie(of: descriptor) == expected ? descriptor : nil
        }.recover { _ in nil }
    }

    /// The number after the first `fd=` in `description`. A plain scan of the bytes: the string algorithms of the
    /// standard library would bring code into the daemon that nothing else runs.
    package static func number(in description: String) -> Int32? {
        let bytes = Array(description.utf8)
        let (f, d, equals) = (UInt8(ascii: "f"), UInt8(ascii: "d"), UInt8(ascii: "="))
        var index = 0
        while index + 3 <= bytes.count && !(bytes[index] == f && bytes[index + 1] == d && bytes[index + 2] == equals) {
            index += 1
        }
        guard index + 3 <= bytes.count else { return nil }
        let digits = bytes[(index + 3)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !digits.isEmpty, digits.count < 10 else { return nil }
        return digits.reduce(0) { $0 * 10 + Int32($1 - UInt8(ascii: "0")) }
    }

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

    /// The kernel's cookie of the socket `descriptor` refers to; `nil` when it has none.
    package static func cookie(of descriptor: Int32) -> UInt64? {
        var cookie: UInt64 = 0
        var length = socklen_t(MemoryLayout<UInt64>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_COOKIE, &cookie, &length) == 0 else { return nil }
        return cookie
    }
}
