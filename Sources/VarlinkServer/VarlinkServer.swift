import BeaconEventLoop
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A varlink server on a Unix stream socket, serving one ``VarlinkService`` on one event loop.
///
/// All connections share the loop, so the service's state needs no locks and fan-out never crosses threads. The
/// loop is Beacon's own (`EpollEventLoop`): the server accepts and reads its sockets itself (``SocketListener``,
/// ``SocketTransport``), without SwiftNIO's channels, whose per-message path was most of a Get's instructions.
public final class VarlinkServer<Service: VarlinkService>: Sendable {
    /// Where to listen.
    public enum Listener: Sendable, Hashable {
        /// Bind a new socket at this path (the directory is created 0700, the socket is made 0600).
        case unixPath(String)
        /// Adopt a listening socket passed by the service manager (socket activation).
        case descriptor(Int32)
    }

    /// The loop the server, its connections and its service run on.
    public let eventLoop: any EventLoop
    /// Where clients connect, `unix:PATH`.
    public let address: String
    private let listener: NIOLoopBound<SocketListener>
    private let core: NIOLoopBound<VarlinkServerCore<Service>>
    /// The socket file the server bound, identified by device and inode: a later server may bind a new file at
    /// the same path, which this one must not remove.
    private let socketFile: SocketFile?
    /// The event loop the server started for itself, shut down with the server.
    private let ownedLoop: EpollEventLoop?

    private init(
        eventLoop: EpollEventLoop,
        address: String,
        listener: NIOLoopBound<SocketListener>,
        core: NIOLoopBound<VarlinkServerCore<Service>>,
        socketFile: SocketFile?,
        ownedLoop: EpollEventLoop?
    ) {
        self.eventLoop = eventLoop
        self.address = address
        self.listener = listener
        self.core = core
        self.socketFile = socketFile
        self.ownedLoop = ownedLoop
    }

    /// Starts listening. `makeService` runs on the server's event loop and creates the service the server
    /// dispatches to. Without `eventLoop`, the server runs on a thread of its own, ended by ``shutdown()``.
    public static func start(
        on eventLoop: EpollEventLoop? = nil,
        listener: Listener,
        info: VarlinkServiceInfo,
        limits: VarlinkServerLimits = VarlinkServerLimits(),
        logger: Logger = Logger(label: "varlink"),
        makeService: @escaping @Sendable () throws -> Service
    ) async throws -> VarlinkServer {
        let ownedLoop = eventLoop == nil ? try EpollEventLoop.start(name: "varlink-server") : nil
        do {
            return try await start(
                eventLoop: eventLoop ?? ownedLoop!,
                ownedLoop: ownedLoop,
                listener: listener,
                info: info,
                limits: limits,
                logger: logger,
                makeService: makeService
            )
        } catch {
            try? await ownedLoop?.shutdownGracefully()
            throw error
        }
    }

    private static func start(
        eventLoop: EpollEventLoop,
        ownedLoop: EpollEventLoop?,
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
        let descriptor: Int32
        let socketFile: SocketFile?
        switch listener {
        case .unixPath(let path):
            try prepareSocketPath(path)
            // Bound here, and removed at shutdown only while the path still names this socket: a newer server
            // may have bound a new one there since.
            descriptor = try bindListeningSocket(path)
            socketFile = SocketFile(path: path)
        case .descriptor(let fd):
            // The service manager's `Backlog=` may be short; the kernel caps this at `net.core.somaxconn`.
            try relisten(fd)
            descriptor = fd
            socketFile = nil
        }
        let socketListener: NIOLoopBound<SocketListener>
        do {
            socketListener = try await eventLoop.submit {
                let socketListener = SocketListener(descriptor: descriptor, loop: eventLoop, logger: logger) { client in
                    core.value.accept(client, on: eventLoop)
                }
                try socketListener.open()
                return NIOLoopBound(socketListener, eventLoop: eventLoop)
            }.get()
        } catch {
            if case .unixPath(let path) = listener {
                close(descriptor)
                unlink(path)
            }
            throw error
        }
        return VarlinkServer(
            eventLoop: eventLoop,
            address: address,
            listener: socketListener,
            core: core,
            socketFile: socketFile,
            ownedLoop: ownedLoop
        )
    }

    /// Makes sure the socket's directory exists (made 0700 when it does not), and removes a stale socket left by a
    /// server that is gone. Refuses to start when another server answers on the path.
    static func prepareSocketPath(_ path: String) throws {
        var info = stat()
        if let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), slash != path.utf8.startIndex {
            let directory = String(path[..<slash])
            if stat(directory, &info) != 0 {
                guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                    throw VarlinkServerError(
                        message: "cannot create \(directory): \(String(cString: strerror(errno)))")
                }
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

    /// The listen queue of a socket the server binds. Glibc's `SOMAXCONN` is 128, too few for a session's
    /// clients starting together; the kernel caps this at `net.core.somaxconn` (4096 by default).
    static var listenBacklog: Int32 { 4096 }

    /// Sets the listen queue of a socket passed by the service manager, whatever its `Backlog=` said.
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
    public func withService<T: Sendable>(_ body: @escaping @Sendable (Service) throws -> T) async throws -> T {
        try await withCore { try body($0.service) }
    }

    /// Runs `body` with the service at once; must be called on the server's event loop.
    public func withServiceOnLoop<T>(_ body: (Service) throws -> T) rethrows -> T {
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
    public func shutdown() async {
        let listener = self.listener
        try? await eventLoop.submit { listener.value.close() }.get()
        socketFile?.removeIfUnchanged()
        let core = self.core
        let closed = try? await eventLoop.submit {
            let futures = core.value.connections.values.map { $0.transport.closeFuture }
            core.value.closeAll()
            return futures
        }.get()
        if let closed {
            try? await EventLoopFuture.andAllComplete(closed, on: eventLoop).get()
        }
        // What the closing connections changed (ephemeral properties) is committed and published.
        try? await eventLoop.submit { core.value.service.tickEnded() }.get()
        try? await ownedLoop?.shutdownGracefully()
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
