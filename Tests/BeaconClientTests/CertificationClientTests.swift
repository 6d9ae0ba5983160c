import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The client side of the varlink certification: the Python `varlink` package's reference server for
/// `org.varlink.certification`, called through the client's raw call API in the order the certification asks for.
@Suite("varlink certification, client side")
struct CertificationClientTests {
    static let python = ProcessInfo.processInfo.environment["BEACON_TEST_PYTHON"]

    @Test(
        "Start, Test01 ... Test11 and End against the reference server",
        .enabled(if: python != nil, "BEACON_TEST_PYTHON is not set (make test sets it)")
    )
    func certification() async throws {
        let python = try #require(Self.python)
        let directory = try makeTemporaryDirectory("beacon-certification")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socketPath = directory + "/certification.sock"
        let server = try ChildProcess(
            python, ["-m", "varlink.tests.test_certification", "--varlink=unix:" + socketPath])
        defer {
            // SIGKILL: the server keeps no state.
            server.signal(SIGKILL)
            server.wait()
        }

        // The server is ready when its socket accepts a connection.
        let address = BeaconAddress(socketPath: socketPath)
        var connected: BeaconClient?
        try await waitUntil(within: .seconds(30), "the reference server to listen") {
            guard server.isRunning else { throw TestFailure("the reference server exited") }
            connected = try? await BeaconClient.connect(to: address)
            return connected != nil
        }
        let client = try #require(connected)
        defer { client.close() }

        let prefix = "org.varlink.certification."
        let start = try await client.call(method: prefix + "Start")
        let id = try #require(start["client_id"])

        var reply = try await client.call(method: prefix + "Test01", parameters: ["client_id": id])
        #expect(reply["bool"] == true)
        reply = try await client.call(method: prefix + "Test02", parameters: ["client_id": id, "bool": reply["bool"]!])
        #expect(reply["int"] == 1)
        reply = try await client.call(method: prefix + "Test03", parameters: ["client_id": id, "int": reply["int"]!])
        #expect(reply["float"]?.doubleValue == 1.0)
        reply = try await client.call(
            method: prefix + "Test04", parameters: ["client_id": id, "float": reply["float"]!])
        #expect(reply["string"] == "ping")
        reply = try await client.call(
            method: prefix + "Test05", parameters: ["client_id": id, "string": reply["string"]!])
        #expect(reply["string"] == "a lot of string")
        reply = try await client.call(
            method: prefix + "Test06",
            parameters: [
                "client_id": id, "bool": reply["bool"]!, "int": reply["int"]!, "float": reply["float"]!,
                "string": reply["string"]!,
            ])
        #expect(reply["struct"]?["float"]?.doubleValue == Double.pi)
        reply = try await client.call(
            method: prefix + "Test07", parameters: ["client_id": id, "struct": reply["struct"]!])
        reply = try await client.call(method: prefix + "Test08", parameters: ["client_id": id, "map": reply["map"]!])
        reply = try await client.call(method: prefix + "Test09", parameters: ["client_id": id, "set": reply["set"]!])
        let mytype = try #require(reply["mytype"])

        // Test10 streams ten replies ("more"), on a connection of its own.
        var strings: [JSONValue] = []
        for try await streamed in client.stream(
            method: prefix + "Test10", parameters: ["client_id": id, "mytype": mytype])
        {
            strings.append(streamed["string"] ?? .null)
        }
        #expect(strings == (1...10).map { .string("Reply number \($0)") })

        // Test11 is oneway: no reply; End on the same connection is answered after it.
        try await client.send(
            method: prefix + "Test11", parameters: ["client_id": id, "last_more_replies": .array(strings)])
        let end = try await client.call(method: prefix + "End", parameters: ["client_id": id])
        #expect(end["all_ok"] == true)

        // Out of order: the server names the error.
        let again = try await client.call(method: prefix + "Start")
        await #expect {
            _ = try await client.call(
                method: prefix + "Test02", parameters: ["client_id": again["client_id"]!, "bool": true])
        } throws: { ($0 as? BeaconError)?.name == "org.varlink.certification.CertificationError" }
    }
}
