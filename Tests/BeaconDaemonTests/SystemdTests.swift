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

    /// beacond under `systemd-socket-activate`, started by the first connection to `directory`/activated.sock.
    struct Activated {
        var process: ChildProcess
        var notify: NotifySocket
        var client: VarlinkTestClient
        var path: String
        var log: String

        init(directory: String) throws {
            path = directory + "/activated.sock"
            notify = try NotifySocket(path: directory + "/notify.sock")
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
            log = directory + "/log"
            process = try ChildProcess(SystemdTests.activator, arguments, environment: environment, error: .file(log))
            // The activator creates the socket; the first connection starts the daemon.
            var client: VarlinkTestClient?
            let deadline = ContinuousClock.now + .seconds(20)
            while client == nil && ContinuousClock.now < deadline && process.isRunning {
                client = try? VarlinkTestClient(path: path)
                if client == nil { usleep(10_000) }
            }
            guard let client else {
                if process.isRunning {
                    process.signal(SIGKILL)
                    process.wait()
                }
                throw TestFailure("the activator did not listen on \(path)")
            }
            self.client = client
        }

        func stop() {
            if process.isRunning {
                process.signal(SIGKILL)
                process.wait()
            }
        }
    }

    /// Runs `body` with beacond started under `systemd-socket-activate` in a new directory; skipped where the
    /// activator is not installed.
    private func withActivated(_ body: (Activated, String) throws -> Void) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.activator) else {
            print("skipping the socket activation test: \(Self.activator) is not installed (Debian package systemd)")
            return
        }
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let activated = try Activated(directory: directory)
        defer { activated.stop() }
        try body(activated, directory)
    }

    @Test("socket activation: beacond adopts the listening socket it is passed")
    func socketActivation() throws {
        try withActivated { activated, directory in
            let (process, notify, path, log) = (activated.process, activated.notify, activated.path, activated.log)
            let status = try activated.client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
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

    /// The client that started the daemon is answered before the rest of start-up, signal handling included
    /// (`BeaconDaemonService`). SIGTERM stays blocked and pending meanwhile; it must not be lost.
    @Test("socket activation: a SIGTERM sent as soon as the first answer arrives, before READY, still stops beacond")
    func sigtermDuringStartUp() throws {
        try withActivated { activated, _ in
            let info = try activated.client.parameters("org.varlink.service.GetInfo")
            #expect(info["product"]?.stringValue == "beacond")
            activated.process.signal(SIGTERM)
            let status = activated.process.wait(within: .seconds(20))
            #expect(status == 0, "\((try? String(contentsOfFile: activated.log, encoding: .utf8)) ?? "")")
            try activated.notify.wait(for: "READY=1")
            try activated.notify.wait(for: "STOPPING=1")
        }
    }
}
