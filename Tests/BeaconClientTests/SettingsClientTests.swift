import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Signals
import Testing

/// Registration, schema defaults and locks through BeaconClient, against the real daemon.
@Suite("BeaconClient settings", .serialized)
struct SettingsClientTests {
    static let fastReconnect: BeaconClient.Options = {
        var options = BeaconClient.Options()
        options.reconnect = .init(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))
        return options
    }()

    @Test("register(defaults:) is one call; other clients see the defaults, again after a daemon restart")
    func registerDefaults() async throws {
        let daemon = try TestDaemon()
        let app = try await BeaconClient.connect(to: daemon.clientAddress, options: Self.fastReconnect)
        defer { app.close() }
        try await app.register(defaults: ["app.player.volume": 5, "app.player.muted": false])

        let status = try await app.daemonStatus()
        #expect(status.settings?.registrations == 1)
        #expect(status.settings?.problems == [])
        #expect(status.storeError == nil)
        let other = try await BeaconClient.connect(to: daemon.clientAddress)
        let volume = try await other.get("app.player.volume")
        #expect(volume.value == 5)
        #expect(volume.isDefault)
        #expect(volume.version == 0)
        other.close()

        // The typed setting takes its default from the registration: the call gives none.
        let setting = app.setting("app.player.volume", as: Int.self)
        #expect(try await firstValue(of: setting, "the registered default") == 5)
        try await app.set("app.player.volume", to: 7)
        #expect(try await firstValue(of: setting, "the stored value") { $0 == 7 } == 7)
        try await app.reset("app.player.volume")
        #expect(try await firstValue(of: setting, "the default again") { $0 == 5 } == 5)

        await #expect {
            try await app.register(schema: ["app.bad": ["type": "no such type"]])
        } throws: { ($0 as? BeaconError)?.code == .invalidSchema }

        // A restart of the daemon drops every registration; the client registers again on reconnecting.
        daemon.kill()
        try daemon.start()
        let checker = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { checker.close() }
        try await waitUntil("the client to register again") {
            _ = try? await app.get("app.player.muted")
            return (try? await checker.get("app.player.muted"))?.isDefault == true
        }
    }

    @Test("a typed registration refuses values of another type with TypeMismatch; properties carry the flags")
    func typedRegistration() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        try await client.register(schema: [
            "app.editor.font-size": ["type": "integer", "minimum": 6, "maximum": 72, "default": 12]
        ])
        await #expect {
            try await client.set("app.editor.font-size", to: 100)
        } throws: { error in
            let error = error as? BeaconError
            return error?.code == .typeMismatch && error?.parameters["expected"]?.stringValue?.contains("72") == true
        }
        let changes = Recorder<PropertyChange>()
        let watch = client.propertyChanges(["app.editor.**"], initial: true).observeNext { changes.append($0) }
        defer { watch.dispose() }
        try await changes.wait("the initial default") { $0.contains { $0.isDefault && $0.value == 12 } }
        try await client.set("app.editor.font-size", to: 14)
        try await client.unset("app.editor.font-size")
        let recorded = try await changes.wait("the fall back to the default") { $0.count >= 3 }
        #expect(recorded.map(\.value) == [12, 14, 12])
        #expect(recorded.map(\.isDefault) == [true, false, true])
    }

    @Test("describe, settingsSources, dump and load give typed results")
    func typedSettingsCalls() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        try await client.register(schema: [
            "app.size": ["type": "integer", "minimum": 6, "maximum": 72, "default": 12, "summary": "Text size"]
        ])
        let unset = try await client.describe("app.size")
        #expect(unset.value == 12 && unset.isDefault && !unset.isSet && unset.version == 0)
        let declaration = try #require(unset.schema)
        #expect(declaration.type == "integer 6...72" && declaration.summary == "Text size")
        #expect(declaration.defaultValue == 12 && declaration.pattern == "app.size" && unset.lock == nil)

        let sources = try await client.settingsSources()
        let registration = try #require(sources.schemas.first { $0.isRegistration })
        #expect(registration.keys.map(\.key) == ["app.size"])
        #expect(registration.keys.first?.defaultValue == 12 && sources.problems.isEmpty)

        try await client.set("app.size", to: 14)
        try await client.set("app.name", to: "beacon")
        let dumped = try await client.dump(prefix: "app")
        #expect(dumped.values == ["size": 14, "name": "beacon"] && dumped.version > 0)
        let loaded = try await client.load(dumped.values, prefix: "copy")
        #expect(loaded.changed == 2 && loaded.unchanged == 0 && loaded.locked.isEmpty)
        #expect(try await client.load(dumped.values, prefix: "copy").unchanged == 2)
        let copied = try await client.describe("copy.size")
        #expect(copied.value == 14 && copied.isSet && !copied.isDefault && copied.schema == nil)
    }
}
