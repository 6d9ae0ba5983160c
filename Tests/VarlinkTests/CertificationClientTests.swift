import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing
import VarlinkClient

#if canImport(Glibc)
    import Glibc
#endif

/// The client side of the varlink certification: the Python `varlink` package's reference server for
/// `org.varlink.certification`, called through the client generated from `org.varlink.certification.varlink`, in the
/// order the certification asks for: once on a BeaconClient, once on VarlinkClient's `VarlinkSocketClient`.
@Suite("varlink certification, client side")
struct CertificationClientTests {
    static let python = ProcessInfo.processInfo.environment["BEACON_TEST_PYTHON"]

    enum Caller: String, CaseIterable, Sendable {
        case beaconClient, varlinkSocketClient
    }

    @Test(
        "Start, Test01 ... Test11 and End against the reference server",
        .enabled(if: python != nil, "BEACON_TEST_PYTHON is not set (make test sets it)"),
        arguments: Caller.allCases
    )
    func certification(caller: Caller) async throws {
        let (socketPath, server) = try Self.startReferenceServer()
        defer { Self.stop(server, socketPath: socketPath) }

        // The server is ready when its socket accepts a connection.
        let address = BeaconAddress(socketPath: socketPath)
        var connected: (any VarlinkCaller)?
        // Generous: Python's start-up on a loaded 2-CPU machine, beside the rest of the suite.
        let deadline = ContinuousClock.now + .seconds(90)
        while connected == nil {
            guard server.isRunning else { throw TestFailure("the reference server exited") }
            guard ContinuousClock.now < deadline else { throw TestFailure("the reference server did not listen") }
            switch caller {
            case .beaconClient: connected = try? await BeaconClient.connect(to: address)
            case .varlinkSocketClient:
                connected = try? VarlinkSocketClient(socketPath: socketPath, timeout: .seconds(2))
            }
            if connected == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let client = try #require(connected)
        defer {
            (client as? BeaconClient)?.close()
            (client as? VarlinkSocketClient)?.close()
        }

        let certification = Certification.Client(client)
        let id = try await certification.start().clientId
        let bool = try await certification.test01(clientId: id).bool
        #expect(bool)
        let int = try await certification.test02(clientId: id, bool: bool).int
        #expect(int == 1)
        let float = try await certification.test03(clientId: id, int: int).float
        #expect(float == 1.0)
        let string = try await certification.test04(clientId: id, float: float).string
        #expect(string == "ping")
        let four = try await certification.test05(clientId: id, string: string)
        #expect(four.string == "a lot of string")
        let structure = try await certification.test06(
            clientId: id, bool: four.bool, int: four.int, float: four.float, string: four.string
        ).struct
        #expect(structure.float == Double.pi)
        let map = try await certification.test07(
            clientId: id,
            struct: .init(bool: structure.bool, int: structure.int, float: structure.float, string: structure.string)
        ).map
        let set = try await certification.test08(clientId: id, map: map).set
        #expect(set == ["one", "two", "three"])
        let mytype = try await certification.test09(clientId: id, set: set).mytype
        #expect(mytype.enum == .two)
        #expect(mytype.interface.anon == .init(foo: true, bar: false))

        // Test10 streams ten replies ("more").
        var strings: [String] = []
        for try await streamed in certification.test10(clientId: id, mytype: mytype) {
            strings.append(streamed.string)
        }
        #expect(strings == (1...10).map { "Reply number \($0)" })

        // Test11 is oneway: no reply; End on the same connection is answered after it.
        try await certification.test11(clientId: id, lastMoreReplies: strings)
        #expect(try await certification.end(clientId: id).allOk)

        // Out of order: the interface's own error, with its parameters decoded.
        let again = try await certification.start().clientId
        await #expect {
            _ = try await certification.test02(clientId: again, bool: true)
        } throws: { error in
            guard case .certificationError(let details)? = error as? Certification.Error else { return false }
            return details.wants.description.contains("Test01") && details.got.description.contains("Test02")
        }
    }

    @Test(
        "Examples/VarlinkCertification's generated client passes against the reference server",
        .enabled(if: python != nil && certificationProgram() != nil, CertificationTests.skipReason)
    )
    func exampleClient() async throws {
        let program = try #require(certificationProgram())
        let (socketPath, server) = try Self.startReferenceServer()
        defer { Self.stop(server, socketPath: socketPath) }
        try await waitUntilServing(socketPath, server: server)
        let run = try await runWithDeadline(program, ["call", socketPath], deadline: .seconds(60))
        #expect(!run.timedOut, "the example's client did not finish within a minute")
        #expect(run.status == 0, "the example's client failed:\n\(run.output)\n\(run.errors)")
        #expect(run.output.contains("Test10: 10 replies streamed"), "output:\n\(run.output)")
        #expect(run.output.contains("End: all_ok true"), "output:\n\(run.output)")
        #expect(run.output.contains("Test02 out of order: CertificationError"), "output:\n\(run.output)")
        #expect(run.output.contains("Certification passed"), "output:\n\(run.output)")
    }

    /// Starts Python's reference server on a socket in a new temporary directory; returns the socket's path and
    /// the server, which ``stop(_:socketPath:)`` ends.
    static func startReferenceServer() throws -> (socketPath: String, server: ChildProcess) {
        let python = try #require(Self.python)
        let directory = try makeTemporaryDirectory("beacon-certification")
        let socketPath = directory + "/certification.sock"
        let server = try ChildProcess(
            python, ["-m", "varlink.tests.test_certification", "--varlink=unix:" + socketPath])
        return (socketPath, server)
    }

    /// Ends the reference server with SIGKILL (it keeps no state) and removes its directory.
    static func stop(_ server: ChildProcess, socketPath: String) {
        server.signal(SIGKILL)
        server.wait()
        try? FileManager.default.removeItem(atPath: (socketPath as NSString).deletingLastPathComponent)
    }
}
