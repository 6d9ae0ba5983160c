import BeaconProtocol
import Foundation
import Testing

@testable import BeaconDaemon

/// ``SettingsService`` on its own: the files it reads, the registrations and their order, the overlay it compiles
/// from both, and the bound on the versions of the settings' changes.
@Suite("SettingsService")
struct SettingsServiceTests {
    static func schema(_ text: String) -> SchemaFile {
        SchemaFile.parse(Array(text.utf8))
    }

    static func defaultText(_ overlay: SettingsOverlay, _ key: String) -> String? {
        let rule = overlay.rule(for: key)
        guard rule.schema >= 0 else { return nil }
        return overlay.schemas[Int(rule.schema)].defaultValue.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("without paths nothing is read; with them the files are, and the overlay follows them")
    func files() throws {
        let service = SettingsService()
        #expect(!service.readFiles(limits: DaemonLimits()))
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("settings-service-\(getpid())")
        let schemas = root.appendingPathComponent("schemas")
        let lockdown = root.appendingPathComponent("lockdown")
        try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: lockdown, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try #"{"keys": {"app.size": {"type": "integer", "default": 12}}}"#.write(
            to: schemas.appendingPathComponent("app.json"), atomically: true, encoding: .utf8)
        try "app.size = 20\n".write(to: lockdown.appendingPathComponent("site"), atomically: true, encoding: .utf8)
        service.paths = SettingsPaths(schemaDirectories: [schemas.path], lockdownDirectory: lockdown.path)
        #expect(service.readFiles(limits: DaemonLimits()))
        service.install(service.compile())
        #expect(service.hasSettings && service.epoch == service.overlay.epoch)
        #expect(Self.defaultText(service.overlay, "app.size") == "12")
        #expect(service.overlay.rule(for: "app.size").lock >= 0)

        try #"{"keys": {"app.size": {"type": "integer", "default": 14}}}"#.write(
            to: schemas.appendingPathComponent("app.json"), atomically: true, encoding: .utf8)
        #expect(service.readFiles(limits: DaemonLimits()))
        service.install(service.compile())
        #expect(Self.defaultText(service.overlay, "app.size") == "14")
    }

    @Test("registrations come after the files, by age; one registered again keeps its place; unregistering says so")
    func registrations() {
        let service = SettingsService()
        service.register(Self.schema(#"{"keys": {"a.k": {"type": "string", "default": "first"}}}"#), of: 7, command: "")
        service.register(
            Self.schema(#"{"keys": {"a.k": {"type": "string", "default": "second"}}}"#), of: 3, command: "")
        #expect(Self.defaultText(service.compile(), "a.k") == "\"first\"")
        // Connection 7 registers again: its new schema keeps the place of its first registration.
        service.register(Self.schema(#"{"keys": {"a.k": {"type": "string", "default": "again"}}}"#), of: 7, command: "")
        #expect(Self.defaultText(service.compile(), "a.k") == "\"again\"")
        #expect(service.registrations.count == 2)
        #expect(service.unregister(7))
        #expect(!service.unregister(7))
        #expect(Self.defaultText(service.compile(), "a.k") == "\"second\"")
        #expect(service.unregister(3))
        let empty = service.compile()
        #expect(empty.isEmpty)
        service.install(empty)
        #expect(!service.hasSettings)
    }

    @Test("the versions of the settings' changes are kept within the history limit and a tenth; the oldest go")
    func pruning() {
        let service = SettingsService()
        for index in 0..<11 { service.recordChange(of: "k\(index)", version: Int64(100 + index)) }
        #expect(service.pruneChangeVersions(limit: 10) == nil, "within the limit and a tenth")
        for index in 11..<15 { service.recordChange(of: "k\(index)", version: Int64(100 + index)) }
        #expect(service.pruneChangeVersions(limit: 10) == 104)
        #expect(service.changeVersions.count == 10)
        #expect(service.changeVersions.values.min() == 105)
    }

    struct Unreadable: Error {}

    @Test("a new overlay changes what keys show: defaults that come, forced values, locks; unreadable keys left out")
    func shownChanges() {
        let old = SettingsOverlay.empty
        let new = SettingsOverlay(
            schemaSources: [
                SettingsOverlay.SchemaSource(
                    name: "app.json", fromFile: true,
                    file: Self.schema(
                        #"{"keys": {"a.k": {"type": "integer", "default": 12}, "c.x": {"type": "integer"}}}"#))
            ],
            lockdownSources: [
                SettingsOverlay.LockdownSource(
                    path: "/lockdown/site", file: LockdownFile.parse(Array("b.l = 7\nd.held\n".utf8)))
            ],
            problems: [])
        let stored: [String: [UInt8]] = ["b.l": Array("1".utf8), "c.x": Array("5".utf8), "d.held": Array("3".utf8)]
        var failed: [String] = []
        let changes = SettingsService.shownChanges(
            from: old, to: new, affected: ["a.k", "b.l", "c.x", "d.held", "e.gone"],
            stored: { name in
                if name == "e.gone" { throw Unreadable() }
                return stored[name]
            },
            failed: { name, _ in failed.append(name) })
        // a.k shows its default now, b.l its forced value, d.held the same value but locked; c.x only got a type.
        #expect(changes.map(\.name) == ["a.k", "b.l", "d.held"])
        #expect(
            changes[0].before.value == nil && changes[0].after.value == Array("12".utf8) && changes[0].after.isDefault)
        #expect(changes[1].before.value == Array("1".utf8) && changes[1].after.value == Array("7".utf8))
        #expect(changes[2].before.value == changes[2].after.value && changes[2].after.lock >= 0)
        #expect(failed == ["e.gone"])
        // And back: the same keys change again.
        let back = SettingsService.shownChanges(
            from: new, to: old, affected: ["a.k", "b.l", "c.x", "d.held"], stored: { stored[$0] },
            failed: { _, _ in })
        #expect(back.map(\.name) == ["a.k", "b.l", "d.held"])
    }

    @Test("Status and Schemas report the overlay in force and the registrations")
    func reports() {
        let service = SettingsService()
        service.register(
            Self.schema(#"{"keys": {"a.k": {"type": "string", "summary": "A key"}}}"#), of: 4, command: " (app)")
        service.install(service.compile())
        let status = service.status
        #expect(status["registrations"] == 1 && status["schemaKeys"] == 1 && status["schemaFiles"] == 0)
        let reply = service.schemasReply
        let source = reply["schemas"]?.arrayValue?.first
        #expect(source?["source"]?.stringValue == "client 4 (app)")
        #expect(source?["registered"] == true)
        #expect(source?["keys"]?.arrayValue?.first?["summary"]?.stringValue == "A key")
        #expect(reply["lockdown"]?.arrayValue?.isEmpty == true)
    }
}
