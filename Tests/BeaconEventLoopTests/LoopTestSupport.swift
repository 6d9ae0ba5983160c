import BeaconEventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// A loop on a thread of its own, shut down at the end of `body`.
func withLoop<T>(_ body: (EpollEventLoop) async throws -> T) async throws -> T {
    let loop = try EpollEventLoop.start(name: "test-loop")
    do {
        let result = try await body(loop)
        try await loop.shutdownGracefully()
        return result
    } catch {
        try? await loop.shutdownGracefully()
        throw error
    }
}

/// A connected pair of non-blocking, close-on-exec Unix stream sockets.
func socketPair() throws -> [Int32] {
    var pair: [Int32] = [-1, -1]
    let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { throw EpollError(call: "socketpair", errno: errno) }
    return pair
}
