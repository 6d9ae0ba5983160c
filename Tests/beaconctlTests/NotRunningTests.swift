import BeaconTestSupport
import Foundation
import Testing

/// A daemon that is not running: exit status 3 and a message that names the socket.
@Suite struct NotRunningTests {
    @Test(arguments: [
        ["get", "a.b"], ["status"], ["list"], ["watch", "**"], ["monitor"], ["wait", "a.b", "--timeout", "1"],
        ["post", "a.b"], ["call", "io.beacon.Daemon.Status"],
    ])
    func noSocketFile(arguments: [String]) throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try CLI.run(arguments, address: "unix:\(directory)/beacon.sock")
        #expect(result.status == 3, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("Error: cannot connect to unix:\(directory)/beacon.sock"))
        #expect(result.stderr.contains("is the daemon running?"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func socketFileWithoutListener() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/beacon.sock"
        // A socket bound but never listening: what a crashed daemon leaves behind.
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        let bound = try withUnixSocketAddress(path) { bind(descriptor, $0, $1) }
        try #require(bound == 0)

        let result = try CLI.run(["get", "a"], address: "unix:" + path)
        #expect(result.status == 3)
        #expect(result.stderr.contains("nobody is listening on \(path)"))
    }

    @Test func defaultAddressComesFromTheEnvironment() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let viaVariable = try CLI.run(
            ["status"], address: nil, environment: ["BEACON_ADDRESS": "unix:\(directory)/explicit.sock"])
        #expect(viaVariable.status == 3)
        #expect(viaVariable.stderr.contains("\(directory)/explicit.sock"))

        let viaRuntimeDirectory = try CLI.run(["status"], address: nil, environment: ["XDG_RUNTIME_DIR": directory])
        #expect(viaRuntimeDirectory.status == 3)
        #expect(viaRuntimeDirectory.stderr.contains("\(directory)/beacon.sock"))
    }
}
