import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// The Python `varlink` package (PyPI) against the real daemon. `make test` sets BEACON_TEST_PYTHON to the
/// virtual environment's python.
@Suite("Python varlink interoperability")
struct PythonInteropTests {
    static let python = ProcessInfo.processInfo.environment["BEACON_TEST_PYTHON"]

    static let script = #"""
        import sys, json, threading, varlink

        address = sys.argv[1]
        out = {}
        with varlink.Client(address=address) as client:
            with client.open("org.varlink.service") as service:
                info = service.GetInfo()
                out["interfaces"] = info["interfaces"]
                out["product"] = info["product"]
                description = service.GetInterfaceDescription("io.beacon.Properties")["description"]
                out["parsed"] = varlink.Interface(description).name
            with client.open("io.beacon.Properties") as props:
                out["set"] = props.Set("py.greeting", {"text": "hello", "n": 3})["version"]
                out["get"] = props.Get("py.greeting")["property"]["value"]
                try:
                    props.Get("py.missing")
                except varlink.VarlinkError as error:
                    out["error"] = error.error()
            with client.open("io.beacon.Properties", namespaced=False) as watcher, \
                    client.open("io.beacon.Properties") as writer:
                stream = watcher.Watch(["py.**"], True, True, None, _more=True)
                first = next(stream)
                out["initial"] = [c["key"] for c in first["changes"]]
                writer.Set("py.greeting", "changed")
                second = next(stream)
                out["change"] = {k: second["changes"][0][k] for k in ("key", "value", "old", "deleted")}
        print(json.dumps(out))
        """#

    @Test("GetInfo, GetInterfaceDescription, Get, Set and a streamed Watch from Python")
    func python() throws {
        guard let python = Self.python else {
            print("skipping the Python interoperability test: BEACON_TEST_PYTHON is not set (make test sets it)")
            return
        }
        let daemon = try TestDaemon()
        let scriptPath = daemon.directory + "/interop.py"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let run = try runProcess(python, [scriptPath, "unix:" + daemon.socketPath])
        try #require(run.status == 0, "python failed: \(run.errors)")
        let text = run.output
        let result = try JSONValue(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(result["product"] == "beacond")
        #expect(result["interfaces"]?.elements.contains("io.beacon.Properties") == true)
        #expect(result["parsed"] == "io.beacon.Properties")
        #expect((result["set"]?.intValue ?? 0) > 0)
        #expect(result["get"] == ["text": "hello", "n": 3])
        #expect(result["error"] == "io.beacon.Properties.KeyNotFound")
        #expect(result["initial"] == ["py.greeting"])
        #expect(
            result["change"] == [
                "key": "py.greeting", "value": "changed", "old": ["text": "hello", "n": 3], "deleted": false,
            ])
    }
}
