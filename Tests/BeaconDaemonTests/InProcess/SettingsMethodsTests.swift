import BeaconProtocol
import NIOCore
import Testing

@testable import BeaconDaemon

/// `io.beacon.Settings`' methods on the bus in process: the settings service reaching the properties through its
/// host.
@Suite("SettingsService's methods in process")
struct SettingsMethodsTests {
    static func settings(_ method: String, _ parameters: JSONValue) -> JSONValue {
        Call.method("io.beacon.Settings." + method, parameters)
    }

    @Test("Load is all or nothing: one value of the wrong type stores none; a good one stores only what changed")
    func loadAllOrNothing() throws {
        let bus = try InProcessBus()
        let client = try bus.connect()
        try client.send([
            Self.settings(
                "Register", ["schema": ["keys": ["app.size": ["type": "integer"], "app.name": ["type": "string"]]]]),
            Call.set("app.name", "kept"),
        ])
        bus.endTick()
        _ = try client.messages()
        let commits = bus.storage.transactions.count

        try client.send(Self.settings("Load", ["prefix": "app", "values": ["size": "big", "name": "new"]]))
        bus.endTick()
        #expect(try client.messages().first?.errorName == "io.beacon.Properties.TypeMismatch")
        #expect(
            bus.storage.transactions.count == commits
                && bus.storage.properties["app.name"]?.value == "\"kept\"".utf8.map { $0 })

        try client.send(Self.settings("Load", ["prefix": "app", "values": ["size": 3, "name": "kept"]]))
        bus.endTick()
        let loaded = try client.messages().first?.parameters
        #expect(loaded?["changed"] == 1 && loaded?["unchanged"] == 1 && loaded?["locked"] == [])
        #expect(bus.storage.properties["app.size"]?.value == Array("3".utf8))
    }

    @Test("Dump leaves out the daemon's keys and ephemeral values; Reset below a prefix deletes each key once")
    func dumpAndReset() throws {
        let bus = try InProcessBus()
        bus.bus.setSystemProperty("session.active", true)
        let client = try bus.connect()
        try client.send([
            Call.set("app.a", 1), Call.set("app.b.c", 2),
            Call.method("io.beacon.Properties.Set", ["key": "app.tmp", "value": 0, "ephemeral": true]),
        ])
        bus.endTick()
        _ = try client.messages()

        try client.send([Self.settings("Dump", [:]), Self.settings("Dump", ["prefix": "app.b"])])
        bus.endTick()
        let dumps = try client.messages()
        #expect(dumps[0].parameters?["values"] == ["app.a": 1, "app.b.c": 2])
        #expect(dumps[1].parameters?["values"] == ["c": 2])

        try client.send([
            Self.settings("Reset", ["key": "app", "recursive": true]),
            Self.settings("Reset", ["key": "session.active"]),
        ])
        bus.endTick()
        let resets = try client.messages()
        #expect(resets[0].parameters?["reset"] == ["app.a", "app.b.c", "app.tmp"], "\(resets)")
        #expect(resets[1].errorName == "io.beacon.Properties.ReadOnly")
        #expect(bus.storage.properties.keys.sorted() == ["session.active"])
    }
}
