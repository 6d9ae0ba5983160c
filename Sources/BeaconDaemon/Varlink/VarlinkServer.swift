import BeaconConfiguration
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A varlink server on a Unix stream socket, serving one ``VarlinkService`` on one event loop.
///
/// All connections share the loop, so the service's state needs no locks and fan-out never crosses threads.
package final class VarlinkServer<Service: VarlinkService>: Sendable {
    /// Where to listen.
    package enum Listener: Sendable, Hashable {
        /// Bind a new socket at this path (the directory is created 0700, the socket is made 0600).
        case unixPath(String)
        /// Adopt a listening socket passed by the service manager (socket activation).
        case descriptor(Int32)
    }

    package let eventLoop: any EventLoop
    package let address: String
    private let serverChannel: any Channel
    private let core: NIOLoopBound<VarlinkServerCore<Service>>
    /// The socket file the server bound, identified by device and inode: a later server may bind a new file at
    /// the same path, which this one must not remove.
    private let socketFile: SocketFile?
    /// The event loop group the server created for itself, shut down with the server.
    private let ownedGroup: MultiThreadedEventLoopGroup?

    private init(
        eventLoop: any EventLoop,
        address: String,
        serverChannel: any Channel,
        core: NIOLoopBound<VarlinkServerCore<Service>>,
        socketFile: SocketFile?,
        ownedGroup: MultiThreadedEventLoopGroup?
    ) {
        self.eventLoop = eventLoop
        self.address = address
        self.serverChannel = serverChannel
        self.core = core
        self.socketFile = socketFile
        self.ownedGroup = ownedGroup
    }

    /// Starts listening. `makeService` runs on the server's event loop and creates the service the server
    /// dispatches to. Without `eventLoop`, the server runs on a thread of its own, ended by ``shutdown()``.
    package static func start(
        on eventLoop: (any EventLoop)? = nil,
        listener: Listener,
        info: VarlinkServiceInfo,
        limits: VarlinkServerLimits = VarlinkServerLimits(),
        logger: Logger = Logger(label: "varlink"),
        makeService: @escaping @Sendable () throws -> Service
    ) async throws -> VarlinkServer {
        let ownedGroup = eventLoop == nil ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        do {
            return try await start(
                eventLoop: eventLoop ?? ownedGroup!.next(),
                ownedGroup: ownedGroup,
                listener: listener,
                info: info,
                limits: limits,
                logger: logger,
                makeService: makeService
            )
        } catch {
            try? await ownedGroup?.shutdownGracefully()
            throw error
        }
    }

    private static func start(
        eventLoop: any EventLoop,
        ownedGroup: MultiThreadedEventLoopGroup?,
        listener: Listener,
        info: VarlinkServiceInfo,
        limits: VarlinkServerLimits,
        logger: Logger,
        makeService: @escaping @Sendable () throws -> Service
    ) async throws -> VarlinkServer {
        let address: String
        switch listener {
        case .unixPath(let path): address = "unix:" + path
        case .descriptor(let fd): address = socketName(fd).map { "unix:" + $0 } ?? "fd:\(fd)"
        }
        let core = try await eventLoop.submit {
            NIOLoopBound(
                try VarlinkServerCore(
                    eventLoop: eventLoop,
                    service: try makeService(),
                    info: info,
                    address: address,
                    limits: limits,
                    logger: logger
                ),
                eventLoop: eventLoop
            )
        }.get()
        let bootstrap = ServerBootstrap(group: eventLoop)
            .serverChannelOption(.backlog, value: listenBacklog)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptPauseHandler(logger: logger))
                }
            }
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelOption(.recvAllocator, value: receiveSizes)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(core.value.makeHandler())
                }
            }
        switch listener {
        case .unixPath(let path):
            try prepareSocketPath(path)
            // Bound here rather than by NIO, which would remove whatever file is at the path when the channel
            // closes, even one that a newer server bound there since.
            let fd = try bindListeningSocket(path)
            let channel: any Channel
            do {
                channel = try await bootstrap.withBoundSocket(fd).get()
                try relisten(fd)
            } catch {
                close(fd)
                unlink(path)
                throw error
            }
            return VarlinkServer(
                eventLoop: eventLoop,
                address: address,
                serverChannel: channel,
                core: core,
                socketFile: SocketFile(path: path),
                ownedGroup: ownedGroup
            )
        case .descriptor(let fd):
            let channel = try await bootstrap.withBoundSocket(fd).get()
            do {
                try relisten(fd)
            } catch {
                try? await channel.close()
                throw error
            }
            return VarlinkServer(
                eventLoop: eventLoop,
                address: address,
                serverChannel: channel,
                core: core,
                socketFile: nil,
                ownedGroup: ownedGroup
            )
        }
    }

    /// Makes sure the socket's directory exists and is private, and removes a stale socket left by a daemon that
    /// is gone. Refuses to start when another server answers on the path.
    static func prepareSocketPath(_ path: String) throws {
        let directory = POSIX.parentDirectory(of: path)
        var info = stat()
        if stat(directory, &info) != 0 {
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw VarlinkServerError(message: "cannot create \(directory): \(String(cString: strerror(errno)))")
            }
        } else if directory.hasPrefix("/tmp/beacon-") {
            // The fallback directory under /tmp must be ours and private.
            guard info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
                throw VarlinkServerError(message: "\(directory) is not a private directory owned by this user")
            }
        }
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw VarlinkServerError(message: "\(path) exists and is not a socket")
        }
        if socketAnswers(path) {
            throw VarlinkServerError(message: "another server is listening on \(path)")
        }
        unlink(path)
    }

    /// The `sockaddr_un` of `path`; `nil` when the path is too long for one.
    private static func unixAddress(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        return address
    }

    /// How much a connection reads at once: it starts small and doubles while reads fill it (up to 64 KiB), and
    /// halves after two reads that fill less than half. The buffer of the last read stays with the connection for the
    /// next one, so the start size is what every idle connection keeps: SwiftNIO's default of 2 KiB was a third of
    /// an idle connection's memory.
    static var receiveSizes: AdaptiveRecvByteBufferAllocator {
        AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65536)
    }

    /// The listen queue of a socket the server binds. Glibc's `SOMAXCONN` is 128, too few for a session's
    /// clients starting together; the kernel caps this at `net.core.somaxconn` (4096 by default).
    static var listenBacklog: Int32 { 4096 }

    /// Sets the listen queue of `fd` again: NIO's adoption of a bound socket calls `listen` with a queue of 128,
    /// whatever the channel's backlog option or the service manager's `Backlog=` said.
    private static func relisten(_ fd: Int32) throws {
        guard listen(fd, listenBacklog) == 0 else {
            throw VarlinkServerError(message: "cannot listen: \(String(cString: strerror(errno)))")
        }
    }

    /// A listening Unix stream socket bound to `path`, with mode 0600.
    static func bindListeningSocket(_ path: String) throws -> Int32 {
        func failure(_ what: String) -> VarlinkServerError {
            VarlinkServerError(message: "cannot \(what) \(path): \(String(cString: strerror(errno)))")
        }
        guard var address = unixAddress(path) else {
            throw VarlinkServerError(message: "socket path too long: \(path)")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("create a socket for") }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            let error = failure("bind")
            close(fd)
            throw error
        }
        guard chmod(path, 0o600) == 0, listen(fd, listenBacklog) == 0 else {
            let error = failure("chmod or listen on")
            close(fd)
            unlink(path)
            throw error
        }
        return fd
    }

    /// The path a Unix socket is bound to.
    static func socketName(_ fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: &address.sun_path) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }

    private static func socketAnswers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard var address = unixAddress(path) else { return false }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }

    /// Runs `body` with the server's core on its event loop.
    package func withCore<T: Sendable>(
        _ body: @escaping @Sendable (VarlinkServerCore<Service>) throws -> T
    ) async throws -> T {
        let core = self.core
        return try await eventLoop.submit { try body(core.value) }.get()
    }

    /// Runs `body` with the service on the server's event loop.
    package func withService<T: Sendable>(_ body: @escaping @Sendable (Service) throws -> T) async throws -> T {
        try await withCore { try body($0.service) }
    }

    /// Runs `body` with the service at once; must be called on the server's event loop.
    package func withServiceOnLoop<T>(_ body: (Service) throws -> T) rethrows -> T {
        eventLoop.preconditionInEventLoop()
        return try body(core.value.service)
    }

    /// Succeeds once the server has written output to a client (the end of a tick that wrote to a connection),
    /// counting from the loop's next task, or after `limit`, whichever comes first.
    package func outputWritten(within limit: TimeAmount) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        // Both succeed it on the event loop, where SwiftNIO ignores a promise's second result.
        let timer = eventLoop.scheduleTask(in: limit) { promise.succeed() }
        let core = self.core
        eventLoop.execute { core.value.tick.afterWrites = { promise.succeed() } }
        return promise.futureResult.always { _ in timer.cancel() }
    }

    /// Stops accepting, closes every connection after writing what is queued, and removes the socket file.
    package func shutdown() async {
        try? await serverChannel.close()
        socketFile?.removeIfUnchanged()
        let core = self.core
        let closed = try? await eventLoop.submit {
            let futures = core.value.connections.values.map { $0.channel.closeFuture }
            core.value.closeAll()
            return futures
        }.get()
        if let closed {
            try? await EventLoopFuture.andAllComplete(closed, on: eventLoop).get()
        }
        // What the closing connections changed (ephemeral properties) is committed and published.
        try? await eventLoop.submit { core.value.service.tickEnded() }.get()
        try? await ownedGroup?.shutdownGracefully()
    }
}

/// What the server does when `accept` fails, most often because the process or the system ran out of file
/// descriptors: it stops accepting for a while instead of retrying at once, logs that once per interval, and goes
/// on by itself. The connections waiting meanwhile stay in the listen queue.
///
/// NIO's own `AcceptBackoffHandler` delays the next read, but a failed accept leaves the listening socket's read
/// pending and registered, so the event loop would retry at once, forever: this handler turns `autoRead` off,
/// which unregisters the socket, and on again after the pause.
final class AcceptPauseHandler: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    /// How long accepting pauses after a failure.
    static let pause = TimeAmount.milliseconds(250)
    /// At most one log line per this interval, with the number of failures since the last.
    static let logInterval: UInt64 = 10_000_000_000

    private let logger: Logger
    private var lastLogged: NIODeadline?
    private var failures = 0
    private var paused = false

    init(logger: Logger) {
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? IOError else {
            context.fireErrorCaught(error)
            return
        }
        failures += 1
        let now = NIODeadline.now()
        if lastLogged.map({ now.uptimeNanoseconds - $0.uptimeNanoseconds >= Self.logInterval }) ?? true {
            logger.error(
                "cannot accept connections, pausing accept: \(error)",
                metadata: ["failures": "\(failures)", "errno": "\(error.errnoCode)"])
            lastLogged = now
            failures = 0
        }
        guard !paused else { return }
        paused = true
        let channel = context.channel
        channel.setOption(.autoRead, value: false).whenFailure { _ in }
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.pause) { [self] in
            paused = false
            channel.setOption(.autoRead, value: true).whenFailure { _ in }
        }
    }
}

/// A socket file a server bound, by path and identity.
struct SocketFile {
    let path: String
    let device: UInt64
    let inode: UInt64

    /// Records the file now at `path`; `nil` when there is none.
    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.path = path
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// Removes the file when the path still names the file that was recorded.
    func removeIfUnchanged() {
        var info = stat()
        guard lstat(path, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode else { return }
        unlink(path)
    }
}
