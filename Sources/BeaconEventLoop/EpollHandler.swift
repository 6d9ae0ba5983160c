import CEpoll

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Told by an ``EpollEventLoop`` when its descriptor is ready. Runs on the loop.
public protocol EpollHandler: AnyObject {
    /// The descriptor is ready for what `readiness` says. Readiness is level-triggered: a handler that leaves
    /// bytes unread is told again in the next round. A handler may be told of readiness that a read or write
    /// then finds gone (`EAGAIN`), and must take that in its stride.
    func ready(_ readiness: EpollReadiness)
}

/// What a handler wants to be told of.
public struct EpollInterest: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bytes to read, or the peer's end of the stream.
    public static let readable = EpollInterest(rawValue: 1)
    /// Room to write.
    public static let writable = EpollInterest(rawValue: 2)

    /// The `epoll_event.events` that ask for this; hang-ups and errors are always reported. The peer's end of its
    /// writing is asked for with `.readable` only: level-triggered, it would be reported in every round to a
    /// handler that stopped reading.
    var epollEvents: UInt32 {
        var events: UInt32 = 0
        if contains(.readable) { events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if contains(.writable) { events |= EPOLLOUT.rawValue }
        return events
    }
}

/// What a descriptor is ready for.
public struct EpollReadiness: Sendable, Hashable {
    /// The `epoll_event.events` the kernel reported.
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A read would not wait: there are bytes, the peer's end of the stream, or an error to read.
    public var isReadable: Bool {
        rawValue & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
    }
    /// There is room to write.
    public var isWritable: Bool { rawValue & EPOLLOUT.rawValue != 0 }
    /// Both directions of the stream are closed (`EPOLLHUP`), reported whatever the interest: a handler that does
    /// not read must close it, or hear of it again in every round.
    public var isHungUp: Bool { rawValue & EPOLLHUP.rawValue != 0 }
    /// The descriptor has an error pending (`EPOLLERR`), reported whatever the interest, like ``isHungUp``.
    public var hasError: Bool { rawValue & EPOLLERR.rawValue != 0 }
}

/// A system call of the loop failed.
public struct EpollError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call that failed.
    public let call: String
    /// Its `errno`.
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
}
