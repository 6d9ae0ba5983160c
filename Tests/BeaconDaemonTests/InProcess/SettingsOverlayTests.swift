import BeaconProtocol
import Testing

@testable import BeaconDaemon

/// ``SettingsOverlay`` on its own: which rule applies to a key, and what the key shows through it.
@Suite("SettingsOverlay")
struct SettingsOverlayTests {
    static func schemas(_ text: String, name: String = "app.json") -> SettingsOverlay.SchemaSource {
        SettingsOverlay.SchemaSource(name: name, fromFile: true, file: SchemaFile.parse(Array(text.utf8)))
    }

    static func lockdown(_ text: String, path: String = "/etc/beacon/lockdown.d/site") -> SettingsOverlay.LockdownSource
    {
        SettingsOverlay.LockdownSource(path: path, file: LockdownFile.parse(Array(text.utf8)))
    }

    static func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    static var overlay: SettingsOverlay {
        SettingsOverlay(
            schemaSources: [
                schemas(
                    """
                    {"keys": {
                      "app.size": {"type": "integer", "default": 12},
                      "app.*": {"type": "string"},
                      "app.theme": {"type": "string", "default": "dark"},
                      "app.name": {"type": "string"},
                      "kiosk.url": {"type": "string", "default": "https://a.example"}
                    }}
                    """),
                schemas(#"{"keys": {"app.size": {"type": "integer", "default": 99}}}"#, name: "later.json"),
            ],
            lockdownSources: [
                lockdown(
                    """
                    # forced, held at the default, held at the stored value
                    kiosk.url = "https://kiosk.example"
                    app.size
                    app.name
                    locked.**
                    """)
            ],
            problems: [])
    }

    @Test("exact keys before patterns, the first source before later ones; locks by exact key or pattern")
    func rules() {
        let overlay = Self.overlay
        #expect(overlay.problems.isEmpty, "\(overlay.problems)")
        let size = overlay.rule(for: "app.size")
        #expect(size.schema >= 0 && size.lock >= 0)
        #expect(Self.text(overlay.schemas[Int(size.schema)].defaultValue) == "12", "the first source wins")
        let other = overlay.rule(for: "app.color")
        #expect(other.schema >= 0 && other.lock < 0)
        #expect(overlay.schemas[Int(other.schema)].pattern.rawValue == "app.*")
        #expect(overlay.rule(for: "app.color.deep").schema < 0, "app.* is one segment")
        #expect(overlay.rule(for: "locked.a.b").lock >= 0)
        #expect(overlay.rule(for: "locked").lock < 0, "locked.** needs a segment below it")
        #expect(overlay.rule(for: "free.key") == .none)
        #expect(SettingsOverlay.empty.rule(for: "app.size") == .none)
    }

    @Test("what a key shows: forced, its default while locked, its stored value, its default, nothing")
    func effective() {
        let overlay = Self.overlay
        func shown(_ name: String, stored: String?) -> SettingsOverlay.Effective {
            overlay.effective(stored: stored.map { Array($0.utf8) }, rule: overlay.rule(for: name))
        }
        let forced = shown("kiosk.url", stored: #""https://mine.example""#)
        #expect(Self.text(forced.value) == #""https://kiosk.example""# && !forced.isDefault && forced.lock >= 0)
        let held = shown("app.size", stored: "30")
        #expect(Self.text(held.value) == "12" && held.isDefault && held.lock >= 0)
        // Locked without a default: the stored value stays, read-only.
        let kept = shown("app.name", stored: #""mine""#)
        #expect(Self.text(kept.value) == #""mine""# && !kept.isDefault && kept.lock >= 0)
        let stored = shown("app.color", stored: #""red""#)
        #expect(Self.text(stored.value) == #""red""# && !stored.isDefault && stored.lock < 0)
        let fallback = shown("app.theme", stored: nil)
        #expect(Self.text(fallback.value) == #""dark""# && fallback.isDefault && fallback.lock < 0)
        #expect(shown("app.color", stored: nil).value == nil, "a pattern's schema has no default")
        #expect(shown("free.key", stored: nil).value == nil)
    }

    @Test("keys with values, exact keys, lock patterns; the fingerprint follows the files, the epoch every overlay")
    func summaries() {
        let overlay = Self.overlay
        #expect(overlay.keysWithValues == ["app.size", "app.theme", "kiosk.url"])
        #expect(overlay.exactKeys == ["app.size", "app.theme", "app.name", "kiosk.url"])
        #expect(overlay.lockPatterns.map(\.rawValue) == ["locked.**"])
        let same = SettingsOverlay(
            schemaSources: overlay.schemaSources, lockdownSources: overlay.lockdownSources, problems: [])
        #expect(same.fingerprint == overlay.fingerprint)
        #expect(same.epoch != overlay.epoch)
        let changed = SettingsOverlay(
            schemaSources: overlay.schemaSources, lockdownSources: [Self.lockdown("kiosk.url = \"https://b\"")],
            problems: [])
        #expect(changed.fingerprint != overlay.fingerprint)
    }
}
