import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing
import VarlinkClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The varlink certification suite of the Python `varlink` package (`varlink.tests.test_certification`) against
/// `Examples/VarlinkCertification`, a separate package that serves `org.varlink.certification` with the server and
/// code generated from its `.varlink` file, on a temporary Unix socket. `make test` builds the example first and
/// names it in `VARLINK_CERTIFICATION_PATH`, and sets BEACON_TEST_PYTHON to a virtual environment's python with
/// `varlink`.
@Suite("varlink certification")
struct CertificationTests {
    static let python = ProcessInfo.processInfo.environment["BEACON_TEST_PYTHON"]
    static let program = certificationProgram()
    static let skipReason: Comment =
        "BEACON_TEST_PYTHON or VARLINK_CERTIFICATION_PATH is not set: no Python with the varlink package, or the example is not built (make test sets both)"
    static let ready = python != nil && program != nil
    /// How long one Python process may run.
    static let deadline = Duration.seconds(60)

    @Test(
        "python -m varlink.tests.test_certification --client passes against our varlink server",
        .enabled(if: ready, skipReason)
    )
    func certificationClient() async throws {
        let python = try #require(Self.python)
        try await withCertificationServer(python: python) { path, _ in
            let run = try await runWithDeadline(
                python,
                ["-m", "varlink.tests.test_certification", "--client", "--varlink=unix:" + path],
                deadline: Self.deadline
            )
            #expect(!run.timedOut, "the certification client did not finish within \(Self.deadline)")
            #expect(run.status == 0, "the certification client failed:\n\(run.output)\n\(run.errors)")
            #expect(run.output.contains("End: {'all_ok': True}"), "output:\n\(run.output)")
            #expect(run.output.contains("Certification passed"), "output:\n\(run.output)")
        }
    }

    /// What the certification client does not reach: the refusals, as a client in another language meets them.
    static let refusalsScript = #"""
        import json, sys, varlink

        address, idl_path = sys.argv[1], sys.argv[2]
        out = {}

        def error_of(call, *args, **kwargs):
            try:
                call(*args, **kwargs)
            except varlink.VarlinkError as error:
                return {"error": error.error(), "parameters": error.parameters()}
            return None

        with varlink.Client(address=address) as client:
            with client.open("org.varlink.service") as service:
                out["interfaces"] = service.GetInfo()["interfaces"]
                with open(idl_path, encoding="utf-8") as idl:
                    text = service.GetInterfaceDescription("org.varlink.certification")["description"]
                    out["same_description"] = text == idl.read()
            with client.open("org.varlink.certification") as con:
                client_id = con.Start()["client_id"]
                out["client_id_length"] = len(client_id)
                out["out_of_order"] = error_of(con.Test02, client_id, True)
                out["forgotten"] = error_of(con.Test01, client_id)
                out["unknown"] = error_of(con.Test01, "not-a-client-id")
                client_id = con.Start()["client_id"]
                con.Test01(client_id)
                out["wrong_value"] = error_of(con.Test02, client_id, False)
                client_id = con.Start()["client_id"]
                ret = con.Test01(client_id)
                ret = con.Test02(client_id, ret["bool"])
                ret = con.Test03(client_id, ret["int"])
                ret = con.Test04(client_id, ret["float"])
                ret = con.Test05(client_id, ret["string"])
                ret = con.Test06(client_id, ret["bool"], ret["int"], ret["float"], ret["string"])
                ret = con.Test07(client_id, ret["struct"])
                ret = con.Test08(client_id, ret["map"])
                ret = con.Test09(client_id, ret["set"])
                out["without_more"] = error_of(con.Test10, client_id, ret["mytype"])
                # The connection still serves after all these errors.
                out["start_again"] = "client_id" in con.Start()
        print(json.dumps(out))
        """#

    @Test(
        "out-of-order calls, unknown client ids and a stream without more are refused with the IDL's errors",
        .enabled(if: ready, skipReason)
    )
    func refusals() async throws {
        let python = try #require(Self.python)
        try await withCertificationServer(python: python) { path, idlPath in
            let script = (path as NSString).deletingLastPathComponent + "/refusals.py"
            try Self.refusalsScript.write(toFile: script, atomically: true, encoding: .utf8)
            let run = try await runWithDeadline(python, [script, "unix:" + path, idlPath], deadline: Self.deadline)
            #expect(!run.timedOut, "the script did not finish within \(Self.deadline)")
            try #require(run.status == 0, "the script failed:\n\(run.output)\n\(run.errors)")
            let result = try JSONValue(parsing: run.output.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(result["interfaces"] == ["org.varlink.service", "org.varlink.certification"])
            #expect(result["same_description"] == true)
            #expect(result["client_id_length"] == 32)
            let certificationError: JSONValue = "org.varlink.certification.CertificationError"
            #expect(result["out_of_order"]?["error"] == certificationError)
            #expect(
                result["out_of_order"]?["parameters"]?["wants"] == ["method": "org.varlink.certification.Test01"]
            )
            #expect(result["out_of_order"]?["parameters"]?["got"]?["method"] == "org.varlink.certification.Test02")
            #expect(result["forgotten"]?["error"] == "org.varlink.certification.ClientIdError")
            #expect(result["unknown"]?["error"] == "org.varlink.certification.ClientIdError")
            #expect(result["wrong_value"]?["error"] == certificationError)
            #expect(result["wrong_value"]?["parameters"]?["got"]?["parameters"]?["bool"] == false)
            #expect(result["without_more"]?["error"] == "org.varlink.service.ExpectedMore")
            #expect(result["start_again"] == true)
        }
    }

    /// Starts the example's server (`varlink-certification serve`) on a socket in a new temporary directory, runs
    /// `body` with the socket path and the path of a file holding the interface's text, then stops the server with
    /// SIGTERM, which must end it cleanly.
    private func withCertificationServer(
        python: String,
        _ body: (_ socketPath: String, _ idlPath: String) async throws -> Void
    ) async throws {
        let program = try #require(Self.program)
        let directory = try makeTemporaryDirectory("beacon-certification")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/certification.sock"
        // The description the server must serve, for the script to compare: the interface's text, as the tests'
        // own copy of the file has it.
        let idlPath = directory + "/org.varlink.certification.varlink"
        try Certification.description.write(toFile: idlPath, atomically: true, encoding: .utf8)
        let server = try ChildProcess(program, ["serve", path])
        do {
            try await waitUntilServing(path, server: server)
            try await body(path, idlPath)
        } catch {
            server.signal(SIGKILL)
            server.wait()
            throw error
        }
        server.signal(SIGTERM)
        let status = server.wait(within: .seconds(30))
        #expect(status == 0, "the example's server did not end cleanly on SIGTERM: \(String(describing: status))")
    }
}

/// The example program: `VARLINK_CERTIFICATION_PATH`, else the example's own debug build when there is one.
func certificationProgram() -> String? {
    BuiltProducts.example(
        "VarlinkCertification", product: "varlink-certification", override: "VARLINK_CERTIFICATION_PATH")
}

/// Waits until a server answers on `path` (a connection is accepted), for at most a minute (a loaded 2-CPU
/// machine), or until `server` exits.
func waitUntilServing(_ path: String, server: ChildProcess) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while (try? BlockingVarlinkConnection(socketPath: path, timeout: .seconds(2)))?.close() == nil {
        guard server.isRunning else { throw TestFailure("the server exited") }
        guard ContinuousClock.now < deadline else {
            throw TestFailure("the server did not listen on \(path)")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// A finished (or killed) child process.
struct ProcessRun: Sendable {
    var status: Int32
    var output: String
    var errors: String
    /// The process outlived its deadline and was killed.
    var timedOut: Bool
}

/// Runs a program to its end, or kills it with SIGKILL once `deadline` has passed. Its output goes through files,
/// so neither stream can fill up and block it.
func runWithDeadline(_ executable: String, _ arguments: [String], deadline: Duration) async throws
    -> ProcessRun
{
    let directory = try makeTemporaryDirectory("beacon-certification")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let outputPath = directory + "/stdout"
    let errorPath = directory + "/stderr"
    let process = try ChildProcess(executable, arguments, output: .file(outputPath), error: .file(errorPath))
    let clock = ContinuousClock()
    let end = clock.now + deadline
    while process.isRunning && clock.now < end {
        try await Task.sleep(for: .milliseconds(20))
    }
    var timedOut = false
    if process.isRunning {
        timedOut = true
        process.signal(SIGKILL)
    }
    let status = process.wait()
    return ProcessRun(
        status: status,
        output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "",
        errors: (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "",
        timedOut: timedOut
    )
}
