import Dispatch
import Synchronization
import VarlinkClient
import VarlinkServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// varlink-certification serve PATH: serves org.varlink.certification on a Unix socket at PATH until SIGTERM or
/// SIGINT.
/// varlink-certification call PATH: runs the certification's client side against the server at PATH; exits 0 when
/// every step passed.
let usage = "usage: varlink-certification serve|call SOCKET-PATH"
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 else {
    print(usage)
    exit(2)
}
let path = arguments[1]

/// Runs `body` in a task and waits for its result on this thread. The program's main code stays synchronous, so
/// that the signal mask below is set before any thread starts: every thread inherits it.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

switch arguments[0] {
case "serve":
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGINT)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    let server = try blocking {
        try await VarlinkServer.start(
            listener: .unixPath(path),
            info: VarlinkServiceInfo(
                vendor: "Beacon", product: "varlink-certification", version: "1", url: "https://varlink.org")
        ) {
            CertificationServer()
        }
    }
    print("serving \(server.address)")
    var received: Int32 = 0
    sigwait(&signals, &received)
    try blocking { await server.shutdown() }
case "call":
    let passed = try blocking {
        let caller = try VarlinkSocketClient(socketPath: path, timeout: .seconds(10))
        defer { caller.close() }
        do {
            try await CertificationClient(certification: Certification.Client(caller)).run()
            print("Certification passed")
            return true
        } catch {
            print("Certification failed: \(error)")
            return false
        }
    }
    exit(passed ? 0 : 1)
default:
    print(usage)
    exit(2)
}
