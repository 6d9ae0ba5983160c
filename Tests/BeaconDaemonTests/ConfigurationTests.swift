import BeaconConfiguration
import BeaconDaemon
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("Configuration")
struct ConfigurationTests {
    /// The value-size limit the daemon enforces, read from a ValueTooLarge error.
    static func valueSizeLimit(_ daemon: TestDaemon) throws -> Int64? {
        let reply = try daemon.connect().call(
            "io.beacon.Properties.Set",
            ["key": "probe", "value": .string(String(repeating: "x", count: 100_000))]
        )
        return reply["limit"]?.intValue
    }

    static func writeConfig(_ directory: String, _ text: String) throws -> String {
        let path = directory + "/beacond.json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("precedence: flags over BEACON_* variables over the file over the defaults")
    func precedence() throws {
        let defaults = try TestDaemon()
        #expect(try Self.valueSizeLimit(defaults) == 65536)

        let file = try Self.writeConfig(defaults.directory, #"{"limits": {"maxValueSize": 1000}}"#)
        let fromFile = try TestDaemon(arguments: ["--config", file])
        #expect(try Self.valueSizeLimit(fromFile) == 1000)

        let fromEnvironment = try TestDaemon(
            arguments: ["--config", file],
            environment: ["BEACON_LIMITS_MAX_VALUE_SIZE": "500"]
        )
        #expect(try Self.valueSizeLimit(fromEnvironment) == 500)

        let fromFlag = try TestDaemon(
            arguments: ["--config", file, "--limits-max-value-size", "300"],
            environment: ["BEACON_LIMITS_MAX_VALUE_SIZE": "500"]
        )
        #expect(try Self.valueSizeLimit(fromFlag) == 300)
    }

    @Test("BEACON_ADDRESS=unix:PATH chooses the socket")
    func address() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/custom.sock"
        let daemon = try TestDaemon(environment: ["BEACON_ADDRESS": "unix:" + path])
        let client = try VarlinkTestClient(path: path)
        let status = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(status["address"]?.stringValue == "unix:" + path)
        #expect(daemon.isRunning)
    }

    @Test("a daemon that stops leaves alone a socket file that a newer daemon bound at its path")
    func socketFileOfAnotherDaemon() throws {
        let first = try TestDaemon()
        #expect(unlink(first.socketPath) == 0)
        let second = try TestDaemon(environment: ["BEACON_ADDRESS": first.address])
        #expect(first.terminate() == 0)
        let client = try VarlinkTestClient(path: first.socketPath)
        let status = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(status["pid"]?.intValue == Int64(second.pid))
        #expect(second.terminate() == 0)
        #expect(access(first.socketPath, F_OK) != 0, "the daemon that bound the file removes it")
    }

    @Test("the fallback socket directory /tmp/beacon-UID is refused when others may enter it; a private one serves")
    func fallbackDirectory() throws {
        var template = Array("/tmp/beacon-fallback-test-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(chmod(directory, 0o755) == 0)
        let address = "unix:" + directory + "/beacon.sock"
        let home = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BEACON_") }
        for name in ["HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_DIRS"] {
            environment[name] = home
        }
        environment["BEACON_ADDRESS"] = address
        let log = home + "/stderr"
        let process = try ChildProcess(
            try BuiltProducts.beacond(), [], environment: environment, error: .file(log))
        let status = process.wait(within: .seconds(60))
        if status == nil {
            process.signal(SIGKILL)
            process.wait()
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(status != nil && status != 0, "the daemon served from a directory others may enter")
        #expect(output.contains("is not a private directory owned by this user"), "stderr: \(output)")
        #expect(access(directory + "/beacon.sock", F_OK) != 0)

        #expect(chmod(directory, 0o700) == 0)
        let daemon = try TestDaemon(environment: ["BEACON_ADDRESS": address])
        let client = try VarlinkTestClient(path: directory + "/beacon.sock")
        let served = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(served["pid"]?.intValue == Int64(daemon.pid))
        #expect(daemon.terminate() == 0)
    }

    @Test("the documented default file matches the built-in defaults")
    func documentedDefaults() throws {
        let source = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/beacond.json").path
        let daemon = try TestDaemon(arguments: ["--config", source])
        #expect(try Self.valueSizeLimit(daemon) == 65536)
        let text = try String(contentsOfFile: source, encoding: .utf8)
        let json = try JSONValue(parsing: text)
        #expect(json["limits"]?["maxValueSize"] == 65536)
    }

    @Test("the documented lifecycle and bridge sections are the built-in defaults; flags override them")
    func lifecycleDefaults() async throws {
        let source = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/beacond.json").path
        // No configuration file of the machine's user: the built-in defaults only.
        let directory = try makeTemporaryDirectory("beacon-config-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let isolated = ["XDG_CONFIG_HOME": directory]
        let documented = try await DaemonConfiguration.load(
            arguments: ["beacond", "--config", source], environment: isolated)
        let builtIn = try await DaemonConfiguration.load(arguments: ["beacond"], environment: isolated)
        #expect(documented.lifecycle == LifecycleSettings())
        #expect(builtIn.lifecycle == LifecycleSettings())
        #expect(documented.bridge.isEmpty)
        let custom = try await DaemonConfiguration.load(
            arguments: ["beacond", "--lifecycle-enabled", "false", "--lifecycle-sleep-timeout-ms", "250"],
            environment: isolated.merging(["BEACON_LIFECYCLE_SESSION_ID": "c7"]) { $1 })
        #expect(!custom.lifecycle.enabled)
        #expect(custom.lifecycle.sleepTimeout == .milliseconds(250))
        #expect(custom.lifecycle.sessionID == "c7")
        await #expect(throws: ConfigurationError.self) {
            try await DaemonConfiguration.load(
                arguments: ["beacond", "--lifecycle-sleep-timeout-ms", "0"], environment: isolated)
        }
    }

    @Test("an invalid configuration stops the daemon with a message")
    func invalid() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.writeConfig(directory, #"{"limits": {"maxValueSize": -5}}"#)
        let process = try ChildProcess(try BuiltProducts.beacond(), ["--config", file], error: .capture)
        let output = String(decoding: process.readError(), as: UTF8.self)
        #expect(process.wait() == 2)
        #expect(output.contains("limits.maxValueSize"))
    }

    @Test(
        "a misspelt flag or a stray argument stops the daemon with a hint; --help and --version answer",
        arguments: [
            (["--log-levle", "debug"], "no such flag; did you mean --log-level?"),
            (["--bogus-flag"], "--bogus-flag: no such flag; --help lists them"),
            (["serve", "--log-level", "debug"], "serve: not a flag"),
        ])
    func unknownFlags(arguments: [String], message: String) throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = [
            "XDG_RUNTIME_DIR": directory, "XDG_CONFIG_HOME": directory, "XDG_STATE_HOME": directory,
            "PATH": "/usr/bin:/bin",
        ]
        let process = try ChildProcess(
            try BuiltProducts.beacond(), arguments, environment: environment, error: .capture)
        let output = String(decoding: process.readError(), as: UTF8.self)
        #expect(process.wait() == 2)
        #expect(output.contains(message), "\(output)")
        #expect(access(directory + "/beacon.sock", F_OK) != 0, "it never served")

        let version = try ChildProcess(try BuiltProducts.beacond(), ["--version"], output: .capture)
        #expect(String(decoding: version.readOutput(), as: UTF8.self) == "beacond \(BeaconVersion.current)\n")
        #expect(version.wait() == 0)
        let help = try ChildProcess(try BuiltProducts.beacond(), ["--help"], output: .capture)
        #expect(String(decoding: help.readOutput(), as: UTF8.self).hasPrefix("usage: beacond"))
        #expect(help.wait() == 0)
    }

    @Test("a daemon whose standard error closed goes on serving: a failed log write is not fatal")
    func closedStandardError() throws {
        let directory = try makeTemporaryDirectory()
        // The daemon's log is a FIFO read here: closing the reading end makes every later log write fail with EPIPE
        // (and raise SIGPIPE, unless the daemon ignores it).
        let fifo = directory + "/beacond.log"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(reader >= 0)
        let daemon = try TestDaemon(directory: directory)
        close(reader)
        let notify = try #require(daemon.notify)
        let before = notify.messages.count
        // A reload logs "configuration reloaded" once it is done.
        daemon.signal(SIGHUP)
        let reloading = try notify.wait(for: "RELOADING=1", after: before)
        try notify.wait(for: "READY=1", after: reloading + 1)
        try daemon.connect().set("after.closed.log", 1)
        let reply = try daemon.connect().parameters("io.beacon.Properties.Get", ["key": "after.closed.log"])
        #expect(reply["property"]?["value"] == 1)
        #expect(daemon.isRunning)
        #expect(daemon.terminate() == 0)
        #expect(access(daemon.socketPath, F_OK) != 0, "the daemon removed its socket")
    }

    @Test("SIGHUP reloads the limits, with RELOADING=1 and READY=1")
    func reload() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.writeConfig(directory, #"{"limits": {"maxValueSize": 1000}}"#)
        let daemon = try TestDaemon(arguments: ["--config", file])
        #expect(try Self.valueSizeLimit(daemon) == 1000)
        let watcher = try daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["**"]], more: true)

        _ = try Self.writeConfig(directory, #"{"limits": {"maxValueSize": 200}}"#)
        let notify = try #require(daemon.notify)
        let before = notify.messages.count
        daemon.signal(SIGHUP)
        let reloading = try notify.wait(for: "RELOADING=1", after: before)
        try notify.wait(for: "READY=1", after: reloading + 1)
        #expect(try Self.valueSizeLimit(daemon) == 200)
        // Connections survive a reload.
        try daemon.connect().set("after.reload", 1)
        #expect(try watcher.receiveItems("changes", count: 1).first?["key"] == "after.reload")
    }
}
