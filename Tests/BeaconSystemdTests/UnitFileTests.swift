import BeaconTestSupport
import Foundation
import Testing

/// `systemd-analyze verify` accepts bad keys and values with exit status 0, printing warnings on stderr,
/// so the unit files are checked for an empty stderr as well.
struct UnitFileTests {
    /// The package's `systemd/` directory, found from this file's real location.
    private static var unitDirectory: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("systemd")
    }

    private struct Outcome {
        var status: Int32
        var standardError: String
    }

    /// Runs `systemd-analyze verify --user` on `units` (file name → contents) written to a private directory.
    private func verify(_ units: [String: String]) throws -> Outcome {
        let directory = try TemporaryDirectory()
        let runtimeDirectory = directory.path + "/runtime"
        try FileManager.default.createDirectory(
            atPath: runtimeDirectory,
            withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700]
        )
        var paths: [String] = []
        for (name, contents) in units.sorted(by: { $0.key < $1.key }) {
            let path = directory.path + "/" + name
            try contents.write(toFile: path, atomically: false, encoding: .utf8)
            paths.append(path)
        }

        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory
        let process = try ChildProcess(
            "/usr/bin/systemd-analyze", ["verify", "--user"] + paths, environment: environment, error: .capture)
        let errorOutput = process.readError()
        return Outcome(status: process.wait(), standardError: String(decoding: errorOutput, as: UTF8.self))
    }

    private func installedUnits() throws -> [String: String] {
        let socket = try String(contentsOf: Self.unitDirectory.appendingPathComponent("beacon.socket"), encoding: .utf8)
        let service = try String(
            contentsOf: Self.unitDirectory.appendingPathComponent("beacon.service"),
            encoding: .utf8
        )
        return ["beacon.socket": socket, "beacon.service": service]
    }

    @Test func unitFilesVerifyWithoutWarnings() throws {
        var units = try installedUnits()
        // verify checks that ExecStart= names an executable; beacond is not installed here.
        let service = try #require(units["beacon.service"])
        try #require(service.contains("ExecStart=%h/.local/bin/beacond\n"))
        units["beacon.service"] = service.replacingOccurrences(
            of: "ExecStart=%h/.local/bin/beacond\n",
            with: "ExecStart=/bin/true\n"
        )

        let outcome = try verify(units)
        #expect(outcome.status == 0)
        #expect(outcome.standardError.isEmpty, "\(outcome.standardError)")
    }

    @Test func verifyReportsUnknownKeysOnStandardError() throws {
        let outcome = try verify(["broken.service": "[Service]\nExecStart=/bin/true\nListenStreem=yes\n"])
        #expect(outcome.status == 0)
        #expect(outcome.standardError.contains("ListenStreem"))
    }

    @Test func unitsDeclareTheDocumentedSettings() throws {
        let units = try installedUnits()
        let socket = try #require(units["beacon.socket"]).split(separator: "\n").map(String.init)
        let service = try #require(units["beacon.service"]).split(separator: "\n").map(String.init)
        for line in ["ListenStream=%t/beacon.sock", "SocketMode=0600", "WantedBy=sockets.target"] {
            #expect(socket.contains(line), "beacon.socket: \(line)")
        }
        for line in [
            "Type=notify", "ExecStart=%h/.local/bin/beacond", "ExecReload=kill -HUP $MAINPID", "Restart=on-failure",
            "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=%h/.local/state/beacon",
            "MemoryDenyWriteExecute=yes", "RestrictAddressFamilies=AF_UNIX",
        ] {
            #expect(service.contains(line), "beacon.service: \(line)")
        }
        #expect(service.contains { $0.hasPrefix("WatchdogSec=") })
    }
}
