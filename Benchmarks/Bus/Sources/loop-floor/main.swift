import BeaconEventLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// The least a server on Beacon's own event loop (BeaconEventLoop's EpollEventLoop) does per varlink call: it
// splits the input at NUL bytes and answers every frame with the same reply, written once per read. It parses
// nothing and looks nothing up, so a round trip to it is the loop's own cost per message, beside nio-floor's for
// SwiftNIO and epoll-floor's for C.
//
// usage: loop-floor SOCKET_PATH   (serves until killed)

/// A Get reply of a 64-byte value, as beacond sends it.
let reply: [UInt8] =
    Array(
        ("{\"parameters\":{\"value\":{\"p\":\"" + String(repeating: "x", count: 64)
            + "\"},\"version\":2,\"persistent\":true}}").utf8) + [0]

/// One connection: reads what is there, answers each frame, closes at the end of the stream or on an error.
final class FloorConnection: EpollHandler {
    let fd: Int32
    let loop: EpollEventLoop
    /// Where reads land; shared by every connection, as the loop runs one handler at a time.
    let input: UnsafeMutableRawBufferPointer
    var output: [UInt8] = []

    init(fd: Int32, loop: EpollEventLoop, input: UnsafeMutableRawBufferPointer) {
        self.fd = fd
        self.loop = loop
        self.input = input
    }

    func ready(_ readiness: EpollReadiness) {
        let count = read(fd, input.baseAddress, input.count)
        guard count > 0 else {
            if count < 0 && errno == EAGAIN { return }
            loop.deregister(fd)
            close(fd)
            return
        }
        var owed = 0
        for byte in UnsafeRawBufferPointer(rebasing: input[0..<count]) where byte == 0 { owed += 1 }
        guard owed > 0 else { return }
        if owed == 1 {
            _ = reply.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            return
        }
        output.removeAll(keepingCapacity: true)
        for _ in 0..<owed { output.append(contentsOf: reply) }
        _ = output.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

/// Accepts every waiting connection.
final class Acceptor: EpollHandler {
    let fd: Int32
    let loop: EpollEventLoop
    let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
    var connections: [Int32: FloorConnection] = [:]

    init(fd: Int32, loop: EpollEventLoop) {
        self.fd = fd
        self.loop = loop
    }

    func ready(_ readiness: EpollReadiness) {
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            let connection = FloorConnection(fd: client, loop: loop, input: input)
            connections[client] = connection
            do {
                try loop.register(client, interest: .readable, handler: connection)
            } catch {
                close(client)
            }
        }
    }
}

guard CommandLine.arguments.count == 2 else {
    let usage = "usage: loop-floor SOCKET_PATH\n"
    _ = usage.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
let path = CommandLine.arguments[1]
unlink(path)
let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
var address = sockaddr_un()
address.sun_family = sa_family_t(AF_UNIX)
withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: Array(path.utf8)) }
let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
    }
}
guard bound == 0, listen(listener, 128) == 0 else {
    perror("loop-floor: bind or listen")
    exit(1)
}
let loop = try EpollEventLoop()
loop.execute {
    // The loop keeps the handlers it was given.
    try! loop.register(listener, interest: .readable, handler: Acceptor(fd: listener, loop: loop))
}
loop.run()
