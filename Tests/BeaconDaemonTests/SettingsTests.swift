import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Schemas, defaults and lockdown against the real daemon, with real files in temporary directories.
@Suite("io.beacon.Settings: schemas, defaults and lockdown")
struct SettingsTests {
    @Test("an unset key answers its default, marked; Set checks the type; Unset falls back to the default")
    func defaults() throws {
        let setup = try SettingsSetup(schemaFiles: ["editor.json": SettingsFixtures.editorSchema])
        let client = try setup.daemon.connect()
        let got = try client.parameters("io.beacon.Properties.Get", ["key": "app.editor.font-size"])["property"]
        #expect(got?["value"] == 12)
        #expect(got?["default"] == true)
        #expect(got?["version"] == 0)

        let listed = try client.parameters("io.beacon.Properties.List", ["prefix": "app.editor"])
        #expect(
            listed["properties"]?.elements.compactMap { $0["key"]?.stringValue } == [
                "app.editor.font-size", "app.editor.theme",
            ])

        let watcher = try setup.daemon.connect()
        let first = try watcher.call(
            "io.beacon.Properties.Watch", ["patterns": ["app.editor.**"], "initial": true], more: true)
        #expect(first["changes"]?.elements.map { $0["default"] } == [true, true])

        let wrongType = try client.call(
            "io.beacon.Properties.Set", ["key": "app.editor.font-size", "value": "big"])
        #expect(wrongType.error == "io.beacon.Properties.TypeMismatch")
        #expect(wrongType["expected"]?.stringValue?.contains("integer") == true)
        let tooLarge = try client.call("io.beacon.Properties.Set", ["key": "app.editor.font-size", "value": 200])
        #expect(tooLarge.error == "io.beacon.Properties.TypeMismatch")
        #expect(tooLarge["reason"]?.stringValue?.contains("72") == true)
        let notInEnum = try client.call("io.beacon.Properties.Set", ["key": "app.editor.theme", "value": "blue"])
        #expect(notInEnum.error == "io.beacon.Properties.TypeMismatch")
        let patternTyped = try client.call("io.beacon.Properties.Set", ["key": "app.editor.recent.a", "value": 1])
        #expect(patternTyped.error == "io.beacon.Properties.TypeMismatch")

        let oldWatcher = try setup.daemon.connect()
        _ = try oldWatcher.call(
            "io.beacon.Properties.Watch", ["patterns": ["app.editor.font-size"], "old": true], more: true)
        let version = try client.set("app.editor.font-size", 14)
        let set = try watcher.receiveItems("changes", count: 1)
        #expect(set.first?["value"] == 14)
        #expect(set.first?["default"] == nil)
        #expect(set.first?["version"]?.intValue == version)
        // The first value of a key replaces its default, which a watcher of old values sees as the old value.
        let replaced = try oldWatcher.receiveItems("changes", count: 1)
        #expect(replaced.first?["old"] == 12)

        _ = try client.parameters("io.beacon.Properties.Unset", ["key": "app.editor.font-size"])
        let fallBack = try watcher.receiveItems("changes", count: 1)
        #expect(fallBack.first?["value"] == 12)
        #expect(fallBack.first?["default"] == true)
        #expect(fallBack.first?["deleted"] == false)
        #expect(fallBack.first?["old"] == nil)
        let after = try client.parameters("io.beacon.Properties.Get", ["key": "app.editor.font-size"])["property"]
        #expect(after?["value"] == 12)
        #expect(after?["default"] == true)
    }

    @Test("a Set of the stored value is silent: no version, no change event, and its reply says so")
    func silentWrites() throws {
        let setup = try SettingsSetup()
        let client = try setup.daemon.connect()
        let version = try client.set("app.mode", ["a": 1, "b": [true, nil]])
        let watcher = try setup.daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["app.**"]], more: true)
        let again = try client.parameters(
            "io.beacon.Properties.Set", ["key": "app.mode", "value": ["a": 1, "b": [true, nil]]])
        #expect(again["unchanged"] == true)
        #expect(again["version"]?.intValue == version)
        let other = try client.set("app.other", 1)
        #expect(other == version + 1)
        // The next change the watcher gets is the other key's: the silent write made none.
        let next = try watcher.receiveItems("changes", count: 1)
        #expect(next.map { $0["key"] } == ["app.other"])
        let changed = try client.parameters("io.beacon.Properties.Set", ["key": "app.mode", "value": 2])
        #expect(changed["unchanged"] == nil)
    }

    @Test("lockdown: a forced value and a lock at the default refuse Set and Unset, naming the file and line")
    func lockdown() throws {
        let setup = try SettingsSetup(
            schemaFiles: ["editor.json": SettingsFixtures.editorSchema],
            lockdownFiles: [
                "10-site": """
                # Kiosk settings
                kiosk.url = "https://example.org"

                app.editor.font-size
                kiosk.screens.** = {"brightness": 80}
                """
            ])
        let client = try setup.daemon.connect()
        let file = setup.lockdown + "/10-site"
        let forced = try client.call("io.beacon.Properties.Set", ["key": "kiosk.url", "value": "x"])
        #expect(forced.error == "io.beacon.Properties.Locked")
        #expect(forced["file"]?.stringValue == file)
        #expect(forced["line"] == 2)
        let atDefault = try client.call("io.beacon.Properties.Set", ["key": "app.editor.font-size", "value": 20])
        #expect(atDefault.error == "io.beacon.Properties.Locked")
        #expect(atDefault["line"] == 4)
        let unset = try client.call("io.beacon.Properties.Unset", ["key": "kiosk.screens.left"])
        #expect(unset.error == "io.beacon.Properties.Locked")
        #expect(unset["line"] == 5)

        let url = try client.parameters("io.beacon.Properties.Get", ["key": "kiosk.url"])["property"]
        #expect(url?["value"] == "https://example.org")
        #expect(url?["locked"]?["file"]?.stringValue == file)
        #expect(url?["locked"]?["forced"] == true)
        let size = try client.parameters("io.beacon.Properties.Get", ["key": "app.editor.font-size"])["property"]
        #expect(size?["value"] == 12)
        #expect(size?["default"] == true)
        #expect(size?["locked"]?["forced"] == false)
        // A pattern lock forces its value on any key it matches.
        let screen = try client.parameters("io.beacon.Properties.Get", ["key": "kiosk.screens.left"])["property"]
        #expect(screen?["value"] == ["brightness": 80])

        let described = try client.parameters("io.beacon.Settings.Describe", ["key": "app.editor.font-size"])
        #expect(described["type"]?.stringValue?.contains("integer") == true)
        #expect(described["summary"] == "Font size")
        #expect(described["defaultValue"] == 12)
        #expect(described["set"] == false)
        #expect(described["source"]?.stringValue == setup.schemas + "/editor.json")
        #expect(described["locked"]?["line"] == 4)
    }

    @Test("a lockdown file written, changed and removed reaches watchers through inotify")
    func inotifyReload() throws {
        let setup = try SettingsSetup(schemaFiles: ["editor.json": SettingsFixtures.editorSchema])
        let client = try setup.daemon.connect()
        try client.set("kiosk.url", "https://mine.example")
        let watcher = try setup.daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["kiosk.**", "app.**"]], more: true)

        try SettingsFixtures.write("kiosk.url = \"https://fleet.example\"\n", to: setup.lockdown + "/50-kiosk")
        let locked = try watcher.receiveItems("changes", count: 1)
        #expect(locked.first?["key"] == "kiosk.url")
        #expect(locked.first?["value"] == "https://fleet.example")
        #expect(locked.first?["locked"] == true)
        #expect(locked.first?["origin"]?["command"] == "beacond")

        // A new schema file brings a default; the watcher sees it appear.
        try SettingsFixtures.write(
            #"{"keys": {"app.clock.format": {"enum": ["12h", "24h"], "default": "24h"}}}"#,
            to: setup.schemas + "/clock.json")
        let appeared = try watcher.receiveItems("changes", count: 1)
        #expect(appeared.first?["key"] == "app.clock.format")
        #expect(appeared.first?["value"] == "24h")
        #expect(appeared.first?["default"] == true)

        #expect(unlink(setup.lockdown + "/50-kiosk") == 0)
        let unlocked = try watcher.receiveItems("changes", count: 1)
        #expect(unlocked.first?["key"] == "kiosk.url")
        #expect(unlocked.first?["value"] == "https://mine.example")
        #expect(unlocked.first?["locked"] == nil)
        #expect(try client.set("kiosk.url", "https://again.example") > 0)
    }

    @Test("a lockdown directory made after the start is noticed through its parents; unrelated names there are not")
    func directoryCreatedLater() throws {
        let setup = try SettingsSetup(lockdownDir: "etc/beacon/lockdown.d", createLockdown: false)
        let client = try setup.daemon.connect()
        try client.set("kiosk.url", "https://mine.example")
        let watcher = try setup.daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["kiosk.**"]], more: true)
        // Something else in the watched parent: not a way to the lockdown directory.
        try FileManager.default.createDirectory(atPath: setup.root + "/unrelated", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: setup.lockdown, withIntermediateDirectories: true)
        try SettingsFixtures.write("kiosk.url = \"https://fleet.example\"\n", to: setup.lockdown + "/kiosk")
        let locked = try watcher.receiveItems("changes", count: 1)
        #expect(locked.first?["value"] == "https://fleet.example")
        #expect(locked.first?["locked"] == true)
    }

    @Test("with inotify off, SIGHUP reloads the files, with the change events it must cause")
    func sighupReload() throws {
        let setup = try SettingsSetup(watch: false)
        let client = try setup.daemon.connect()
        try client.set("app.volume", 3)
        let watcher = try setup.daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["app.**"]], more: true)
        try SettingsFixtures.write("app.volume = 0\n", to: setup.lockdown + "/quiet")
        // Nothing follows the directory: the write alone changes nothing.
        let before = try client.parameters("io.beacon.Properties.Get", ["key": "app.volume"])["property"]
        #expect(before?["value"] == 3)
        setup.daemon.signal(SIGHUP)
        let changes = try watcher.receiveItems("changes", count: 1)
        #expect(changes.first?["value"] == 0)
        #expect(changes.first?["locked"] == true)
        let refused = try client.call("io.beacon.Properties.Set", ["key": "app.volume", "value": 4])
        #expect(refused.error == "io.beacon.Properties.Locked")
    }

    @Test("a bad file next to good ones is skipped, logged with its line and reported by Status")
    func badFiles() throws {
        let setup = try SettingsSetup(
            schemaFiles: [
                "a-good.json": #"{"keys": {"app.a": {"type": "integer", "default": 1}}}"#,
                "b-broken.json": "{\n  \"keys\": {\n    \"app.b\": {\"type\": \"integer\",,}\n  }\n}\n",
                "c-partly.json": """
                {"keys": {
                  "app.c": {"type": "string", "default": "c"},
                  "app.bad": {"type": "integer", "default": "not a number"}
                }}
                """,
            ],
            lockdownFiles: ["locks": "app.locked = true\nnot a key!\napp.other = {broken\n"])
        let client = try setup.daemon.connect()
        #expect(try client.parameters("io.beacon.Properties.Get", ["key": "app.a"])["property"]?["value"] == 1)
        #expect(try client.parameters("io.beacon.Properties.Get", ["key": "app.c"])["property"]?["value"] == "c")
        let locked = try client.call("io.beacon.Properties.Set", ["key": "app.locked", "value": false])
        #expect(locked.error == "io.beacon.Properties.Locked")

        let status = try client.parameters("io.beacon.Daemon.Status")["status"]
        let problems = status?["settings"]?["problems"]?.elements ?? []
        func lines(_ file: String) -> [Int64] {
            problems.filter { $0["file"]?.stringValue?.hasSuffix(file) == true }.compactMap { $0["line"]?.intValue }
        }
        #expect(lines("b-broken.json") == [3])
        #expect(lines("c-partly.json") == [3])
        #expect(lines("locks") == [2, 3])
        #expect(status?["settings"]?["lockdownFiles"] == 1)
        let log = setup.daemon.log
        #expect(log.contains("b-broken.json"))
        #expect(log.contains("c-partly.json"))
    }

    @Test("Register lasts as long as its connection; bad schemas get InvalidSchema")
    func registration() throws {
        let setup = try SettingsSetup(schemaFiles: ["editor.json": SettingsFixtures.editorSchema])
        let watcher = try setup.daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["app.**"]], more: true)
        var registrant: VarlinkTestClient? = try setup.daemon.connect()
        let registered = try registrant!.parameters(
            "io.beacon.Settings.Register",
            [
                "schema": [
                    "keys": [
                        "app.player.volume": ["type": "integer", "default": 5],
                        // A file declares this key already: the file's declaration stays.
                        "app.editor.theme": ["type": "string", "default": "solarized"],
                    ]
                ]
            ])
        #expect(registered["keys"] == 2)
        let appeared = try watcher.receiveItems("changes", count: 1)
        #expect(appeared.map { $0["key"] } == ["app.player.volume"])
        #expect(appeared.first?["value"] == 5)
        let client = try setup.daemon.connect()
        let theme = try client.parameters("io.beacon.Properties.Get", ["key": "app.editor.theme"])["property"]
        #expect(theme?["value"] == "light")

        let bad = try client.call(
            "io.beacon.Settings.Register", ["schema": ["keys": ["app.x": ["type": "integr"]]]])
        #expect(bad.error == "io.beacon.Settings.InvalidSchema")
        #expect(bad["problems"]?.elements.isEmpty == false)

        registrant = nil
        let gone = try watcher.receiveItems("changes", count: 1)
        #expect(gone.first?["key"] == "app.player.volume")
        #expect(gone.first?["deleted"] == true)
        let missing = try client.call("io.beacon.Properties.Get", ["key": "app.player.volume"])
        #expect(missing.error == "io.beacon.Properties.KeyNotFound")
    }

    @Test("Reset of a subtree skips locked keys; Dump then Load into an empty daemon gives the same List")
    func resetDumpLoad() throws {
        let setup = try SettingsSetup(
            schemaFiles: ["editor.json": SettingsFixtures.editorSchema], lockdownFiles: ["l": "app.editor.theme\n"])
        let client = try setup.daemon.connect()
        try client.set("app.editor.font-size", 16)
        try client.set("app.editor.recent.a", "notes.txt")
        try client.set("app.editor", ["window": [800, 600]])
        let dumped = try client.parameters("io.beacon.Settings.Dump", ["prefix": "app.editor"])
        #expect(
            dumped["values"] == [
                "": ["window": [800, 600]], "font-size": 16, "recent.a": "notes.txt",
            ])
        let listed = try client.parameters("io.beacon.Properties.List", ["prefix": "app"])["properties"]

        let other = try SettingsSetup(
            schemaFiles: ["editor.json": SettingsFixtures.editorSchema], lockdownFiles: ["l": "app.editor.theme\n"])
        let loader = try other.daemon.connect()
        let loaded = try loader.parameters(
            "io.beacon.Settings.Load", ["prefix": "app.editor", "values": dumped["values"] ?? [:]])
        #expect(loaded["changed"] == 3)
        let relisted = try loader.parameters("io.beacon.Properties.List", ["prefix": "app"])["properties"]
        func shown(_ list: JSONValue?) -> [JSONValue] {
            (list?.elements ?? []).map { .array([$0["key"] ?? nil, $0["value"] ?? nil, $0["default"] ?? nil]) }
        }
        #expect(shown(relisted) == shown(listed))
        // All or nothing: one bad value stores nothing.
        let refused = try loader.call(
            "io.beacon.Settings.Load", ["prefix": "app.moved", "values": ["a": 1, "b": 2, "..": 3]])
        #expect(refused.error == "io.beacon.Properties.InvalidKey")
        #expect(try loader.call("io.beacon.Properties.Get", ["key": "app.moved.a"]).error != nil)

        let reset = try client.parameters(
            "io.beacon.Settings.Reset", ["key": "app.editor", "recursive": true])
        #expect(
            reset["reset"] == ["app.editor", "app.editor.font-size", "app.editor.recent.a"])
        let size = try client.parameters("io.beacon.Properties.Get", ["key": "app.editor.font-size"])["property"]
        #expect(size?["default"] == true)
        let lockedReset = try client.call("io.beacon.Settings.Reset", ["key": "app.editor.theme"])
        #expect(lockedReset.error == "io.beacon.Properties.Locked")
    }
}
