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

    static let settingsScript = #"""
        import sys, json, varlink

        address = sys.argv[1]
        out = {}
        with varlink.Client(address=address) as client:
            with client.open("org.varlink.service") as service:
                description = service.GetInterfaceDescription("io.beacon.Settings")["description"]
                out["parsed"] = varlink.Interface(description).name
            with client.open("io.beacon.Properties") as props:
                size = props.Get("app.editor.font-size")["property"]
                out["default"] = {k: size.get(k) for k in ("value", "default", "version")}
                url = props.Get("kiosk.url")["property"]
                out["locked"] = url["locked"]
                out["listed"] = [(p["key"], p.get("default", False), "locked" in p)
                                 for p in props.List("")["properties"]]
                try:
                    props.Set("app.editor.font-size", "large", None, None)
                except varlink.VarlinkError as error:
                    out["typeError"] = error.error()
                try:
                    props.Set("kiosk.url", "x", None, None)
                except varlink.VarlinkError as error:
                    out["lockError"] = [error.error(), error.parameters()["line"]]
            with client.open("io.beacon.Settings") as settings:
                described = settings.Describe("app.editor.font-size")
                out["described"] = [described["type"], described["summary"], described["defaultValue"]]
        print(json.dumps(out))
        """#

    @Test("from Python: Get and List carry the default and locked flags; Settings.Describe; the named errors")
    func pythonSettings() throws {
        guard let python = Self.python else {
            print("skipping the Python interoperability test: BEACON_TEST_PYTHON is not set (make test sets it)")
            return
        }
        let root = try makeTemporaryDirectory("beacon-python-settings")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/schemas", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/lockdown", withIntermediateDirectories: true)
        try #"{"keys": {"app.editor.font-size": {"type": "integer", "default": 12, "summary": "Font size"}}}"#
            .write(toFile: root + "/schemas/editor.json", atomically: true, encoding: .utf8)
        try "# kiosk\nkiosk.url = \"https://example.org\"\n".write(
            toFile: root + "/lockdown/kiosk", atomically: true, encoding: .utf8)
        let daemon = try TestDaemon(arguments: [
            "--settings-schema-dirs", root + "/schemas", "--settings-lockdown-dir", root + "/lockdown",
        ])
        let scriptPath = daemon.directory + "/settings.py"
        try Self.settingsScript.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let run = try runProcess(python, [scriptPath, "unix:" + daemon.socketPath])
        try #require(run.status == 0, "python failed: \(run.errors)")
        let result = try JSONValue(parsing: run.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(result["parsed"] == "io.beacon.Settings")
        #expect(result["default"] == ["value": 12, "default": true, "version": 0])
        #expect(result["locked"] == ["file": .string(root + "/lockdown/kiosk"), "line": 2, "forced": true])
        #expect(result["listed"] == [["app.editor.font-size", true, false], ["kiosk.url", false, true]])
        #expect(result["typeError"] == "io.beacon.Properties.TypeMismatch")
        #expect(result["lockError"] == ["io.beacon.Properties.Locked", 2])
        #expect(result["described"] == ["integer", "Font size", 12])
    }
}
