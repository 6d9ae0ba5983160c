import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("systemd integration")
struct SystemdTests {
    static let activator = "/usr/bin/systemd-socket-activate"

    @Test("socket activation: beacond adopts the listening socket it is passed")
    func socketActivation() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.activator) else {
            print("skipping the socket activation test: \(Self.activator) is not installed (Debian package systemd)")
            return
        }
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/activated.sock"
        let notify = try NotifySocket(path: directory + "/notify.sock")
        // The activator passes its children only the variables named with -E.
        var environment = [
            "XDG_RUNTIME_DIR": directory + "/run", "XDG_STATE_HOME": directory + "/state",
            "XDG_CONFIG_HOME": directory + "/config", "HOME": directory, "NOTIFY_SOCKET": notify.path,
        ]
        // A sanitized build's options (make test-sanitizers) reach the daemon too.
        for name in ["ASAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[name] { environment[name] = value }
        }
        let arguments =
            ["-l", path] + environment.sorted { $0.key < $1.key }.map { "-E\($0.key)=\($0.value)" }
            + [try BuiltProducts.beacond()]
        let log = directory + "/log"
        let process = try ChildProcess(Self.activator, arguments, environment: environment, error: .file(log))
        defer {
            if process.isRunning {
                process.signal(SIGKILL)
                process.wait()
            }
        }

        // The activator creates the socket; the first connection starts the daemon.
        var client: VarlinkTestClient?
        let deadline = ContinuousClock.now + .seconds(20)
        while client == nil && ContinuousClock.now < deadline && process.isRunning {
            client = try? VarlinkTestClient(path: path)
            if client == nil { usleep(10_000) }
        }
        let connected = try #require(client, "the activator did not listen on \(path)")
        let status = try connected.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(
            status["address"]?.stringValue == "unix:" + path,
            "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
        )
        try notify.wait(for: "READY=1", alive: { process.isRunning })
        #expect(access(directory + "/state/beacon/store.sqlite", F_OK) == 0)
        // No socket of its own was bound at the default path.
        #expect(access(directory + "/run/beacon.sock", F_OK) != 0)

        process.signal(SIGTERM)
        #expect(process.wait() == 0)
        try notify.wait(for: "STOPPING=1")
    }
}
