import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// The configuration's `bridge` section against a python-dbusmock service on a private bus.
@Suite("The declarative D-Bus bridge in beacond")
struct DBusBridgeTests {
    static let service = "com.example.Net"
    static let path = "/com/example/Net"

    static func entry(_ source: String, _ member: String) -> String {
        """
        {"bus": "system", "name": "\(service)", "path": "\(path)", "interface": "\(service)", "\(source)": "\(member)"}
        """
    }

    /// A directory for the tests' configuration files, removed when released.
    final class ConfigurationDirectory {
        let path: String
        init() throws { path = try makeTemporaryDirectory("beacon-bridge-config") }
        deinit { try? FileManager.default.removeItem(atPath: path) }

        /// Writes `text` to a new file in the directory and returns its path.
        func write(_ text: String, name: String = "beacond.json") throws -> String {
            let file = path + "/" + name
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            return file
        }
    }

    static func mock(_ bus: PrivateBus, _ method: String, _ arguments: String...) throws {
        try bus.busctl(["call", service, path, "org.freedesktop.DBus.Mock", method] + arguments)
    }

    @Test("a D-Bus property becomes a Beacon property, a signal a notification; the service leaving deletes it")
    func propertiesAndSignals() throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        try bus.startMock(name: Self.service, arguments: ["--system", Self.service, Self.path, Self.service])
        try Self.mock(bus, "AddProperty", "ssv", Self.service, "State", "u", "20")
        let directory = try ConfigurationDirectory()
        let configuration = try directory.write(
            """
            {
              "lifecycle": {"enabled": false},
              "bridge": {
                "properties": {"system.net.state": \(Self.entry("property", "State"))},
                "notifications": {
                  "system.net.changed": \(Self.entry("signal", "Changed")),
                  "system.net.stateChanged": \(Self.entry("property", "State"))
                }
              }
            }
            """)
        let daemon = try TestDaemon(
            arguments: ["--config", configuration, "--lifecycle-reconnect-ms", "50"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        )
        let watcher = try daemon.connect()
        var reply = try watcher.call(
            "io.beacon.Properties.Watch", ["patterns": ["system.net.**"], "initial": true], more: true)
        #expect(reply.error == nil)
        let observer = try daemon.connect()
        #expect(
            try observer.call("io.beacon.Notifications.Observe", ["patterns": ["system.net.**"]], more: true).error
                == nil)

        // The value read at start-up, in the initial reply or a later one.
        var state: JSONValue?
        while true {
            for item in reply["changes"]?.elements ?? [] where item["key"] == "system.net.state" {
                state = item["value"]
            }
            if state == 20 { break }
            reply = try watcher.receive()
        }
        let client = try daemon.connect()
        #expect(try client.parameters("io.beacon.Daemon.Status")["status"]?["bridge"] == ["system bus": "connected"])
        let readOnly = try client.call("io.beacon.Properties.Set", ["key": "system.net.state", "value": 1])
        #expect(readOnly.error == "io.beacon.Properties.ReadOnly")

        try bus.busctl("set-property", Self.service, Self.path, Self.service, "State", "u", "70")
        let changes = try watcher.receiveItems("changes", count: 1)
        #expect(changes.map { $0["value"] } == [70])
        var notes = try observer.receiveItems("notifications", count: 1)
        #expect(notes.map { $0["name"] } == ["system.net.stateChanged"])
        #expect(notes.first?["userInfo"] == ["arguments": [70], "value": 70])

        try Self.mock(bus, "EmitSignal", "sssav", Self.service, "Changed", "si", "2", "s", "wifi", "i", "-3")
        notes = try observer.receiveItems("notifications", count: 1)
        #expect(notes.map { $0["name"] } == ["system.net.changed"])
        #expect(notes.first?["userInfo"] == ["arguments": ["wifi", -3]])

        // The service leaves: the property it fed is deleted; the daemon serves on.
        bus.stopMock(name: Self.service)
        let deleted = try watcher.receiveItems("changes", count: 1)
        #expect(deleted.first?["key"] == "system.net.state")
        #expect(deleted.first?["deleted"] == true)
        #expect(try client.set("app.value", 1) > 0)
    }

    @Test("a bad bridge entry stops the daemon at start-up with the key and the reason")
    func badEntries() throws {
        /// A `bridge` section with one property entry: a valid one with `changes` applied.
        func section(target: String = "a.b", _ changes: [String: String?] = [:], extra: String = "") -> String {
            var fields: [String: String?] = [
                "bus": "system", "name": "a.b", "path": "/x", "interface": "a.b", "property": "P",
            ]
            for (key, value) in changes { fields[key] = value }
            let members = fields.keys.sorted().compactMap { key in fields[key]!.map { "\"\(key)\": \"\($0)\"" } }
            let entry = "{" + (members + (extra.isEmpty ? [] : [extra])).joined(separator: ", ") + "}"
            return #"{"bridge": {"properties": {""# + target + #"": "# + entry + "}}}"
        }
        let cases: [(String, String)] = [
            (section(["name": "x"]), "not a valid D-Bus bus name"),
            (section(["path": "x"]), "not a valid D-Bus object path"),
            (section(["property": nil]), "exactly one of"),
            (section(["signal": "S"]), "exactly one of"),
            (section(target: "a b"), "not a valid key"),
            (section(target: "session.active"), "belongs to the lifecycle bridge"),
            (section(target: "lifecycle.x"), "belongs to the lifecycle bridge"),
            (section(extra: #""argument": 1"#), "only for a signal source"),
            (section(extra: #""map": 1"#), "expected an object"),
            (section(extra: #""quietMs": 10"#), "expected a positive quietMs with a quietValue"),
            (section(["bus": "tcp"]), "expected system, session or a D-Bus address"),
            (section(extra: #""extra": 1"#), "unknown field"),
            (#"{"bridge": {"signals": {}}}"#, "bridge.signals"),
        ]
        let directory = try ConfigurationDirectory()
        for (index, (text, reason)) in cases.enumerated() {
            let path = try directory.write(text, name: "\(index).json")
            let result = try runProcess(
                try BuiltProducts.beacond(), ["--config", path, "--address", "unix:/nonexistent/x.sock"])
            #expect(result.status == 2, "\(text)")
            #expect(result.errors.contains("configuration bridge"), "\(text): \(result.errors)")
            #expect(result.errors.contains(reason), "\(text): \(result.errors)")
        }
    }
}
