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

    @Test("a lockdown file being written keeps its last complete reading while another file of the directory changes")
    func halfWrittenLockdownFile() throws {
        let setup = try SettingsSetup(lockdownFiles: ["45-half": "acc.half.num = 12345\nacc.half.other\n"])
        let watcher = try setup.daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["acc.**"]], more: true)
        let client = try setup.daemon.connect()
        #expect(
            try client.call("io.beacon.Properties.Set", ["key": "acc.half.other", "value": 1]).error
                == "io.beacon.Properties.Locked")

        // 45-half rewritten in place: its first half written, the file still open.
        let path = setup.lockdown + "/45-half"
        let descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        try #require(descriptor >= 0)
        var closed = false
        defer { if !closed { close(descriptor) } }
        func write(_ text: String) {
            let bytes = Array(text.utf8)
            #expect(bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) } == bytes.count)
        }
        write("acc.half.num = 67")
        // Meanwhile another file changes: the reload it causes keeps 45-half's complete reading.
        try SettingsFixtures.write("acc.other = 1\n", to: setup.lockdown + "/50-other")
        let other = try watcher.receiveItems("changes", count: 1)
        // On failure, what the daemon read and why (a reload of every file, by SIGHUP or a directory event, reads
        // 45-half as it is).
        let reloads = {
            setup.daemon.log.split(separator: "\n").filter { $0.contains("reload") || $0.contains("settings") }
        }
        #expect(other.map { $0["key"] } == ["acc.other"], "\(reloads())")
        let num = try client.parameters("io.beacon.Properties.Get", ["key": "acc.half.num"])["property"]
        #expect(num?["value"] == 12345)
        #expect(
            try client.call("io.beacon.Properties.Set", ["key": "acc.half.other", "value": 1]).error
                == "io.beacon.Properties.Locked")

        // Finished and closed: now it is read.
        write("890\nacc.half.other\n")
        close(descriptor)
        closed = true
        let finished = try watcher.receiveItems("changes", count: 1)
        #expect(finished.map { $0["key"] } == ["acc.half.num"])
        #expect(finished.first?["value"] == 67890)
        #expect(
            try client.call("io.beacon.Properties.Set", ["key": "acc.half.other", "value": 1]).error
                == "io.beacon.Properties.Locked")
    }

    @Test("a client that had caught up before a stop resyncs when the settings files changed meanwhile, not otherwise")
    func changedWhileStopped() throws {
        let setup = try SettingsSetup(schemaFiles: ["editor.json": SettingsFixtures.editorSchema])
        var version = try setup.daemon.connect().set("app.editor.recent.a", "notes.txt")
        func watch(since: Int64) throws -> VarlinkReply {
            try setup.daemon.connect().call(
                "io.beacon.Properties.Watch", ["patterns": ["app.**"], "since": .int(since)], more: true)
        }
        // Files unchanged across a restart: nothing to tell a caught-up client.
        #expect(setup.daemon.terminate() == 0)
        try setup.daemon.start()
        let unchanged = try watch(since: version)
        #expect(unchanged["resync"] == nil)
        #expect(unchanged["changes"]?.elements.isEmpty == true)

        // A default changed and a lockdown file added while the daemon was stopped.
        #expect(setup.daemon.terminate() == 0)
        try SettingsFixtures.write(
            SettingsFixtures.editorSchema.replacingOccurrences(of: #""default": 12"#, with: #""default": 14"#),
            to: setup.schemas + "/editor.json")
        try SettingsFixtures.write("app.editor.theme = \"dark\"\n", to: setup.lockdown + "/10-site")
        try setup.daemon.start()
        let caughtUp = try watch(since: version)
        #expect(caughtUp["resync"] == true)
        let shown = Dictionary(
            uniqueKeysWithValues: (caughtUp["changes"]?.elements ?? []).map { ($0["key"]?.stringValue ?? "", $0) })
        #expect(shown["app.editor.font-size"]?["value"] == 14)
        #expect(shown["app.editor.theme"]?["value"] == "dark")
        #expect(shown["app.editor.recent.a"]?["value"] == "notes.txt")
        #expect(try watch(since: version - 1)["resync"] == true)
        // From the version after the restart on, the history holds again.
        version = try #require(caughtUp["version"]?.intValue)
        let after = try watch(since: version)
        #expect(after["resync"] == nil)
    }

    @Test("the history of defaults that came and went is bounded by store.historyLimit, with a resync beyond it")
    func boundedDefaultHistory() throws {
        let setup = try SettingsSetup()
        let daemon = try TestDaemon(arguments: setup.daemon.arguments + ["--store-history-limit", "20"])
        let start = try daemon.connect().set("app.start", true)
        // 60 keys registered with a default, each by a client that then leaves: a default comes and goes each time.
        for index in 0..<60 {
            let registrant = try daemon.connect()
            _ = try registrant.parameters(
                "io.beacon.Settings.Register",
                ["schema": ["keys": ["app.registered.k\(index)": ["type": "integer", "default": .int(Int64(index))]]]])
        }
        // The last registrant's departure has been applied once its deletion is in a replay.
        let last = try daemon.connect().set("app.end", true)
        let recent = try daemon.connect().call(
            "io.beacon.Properties.Watch", ["patterns": ["app.**"], "since": .int(last - 10)], more: true)
        #expect(recent["resync"] == nil)
        let old = try daemon.connect().call(
            "io.beacon.Properties.Watch", ["patterns": ["app.**"], "since": .int(start)], more: true)
        #expect(old["resync"] == true, "a replay from before 120 changes of defaults, with a history of 20")
        #expect((old["changes"]?.elements.count ?? 0) < 10, "a resync lists what is, not 60 deletions")
    }

    @Test("a key held at its default by a lock shows the lock's change, version and origin, in every view")
    func lockedAtDefaultViewsAgree() throws {
        let setup = try SettingsSetup(schemaFiles: ["editor.json": SettingsFixtures.editorSchema])
        let client = try setup.daemon.connect()
        let stored = try client.set("app.editor.font-size", 14)
        let watcher = try setup.daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["app.editor.**"]], more: true)
        try SettingsFixtures.write("app.editor.font-size\n", to: setup.lockdown + "/10-site")
        let event = try #require(try watcher.receiveItems("changes", count: 1).first)
        #expect(event["key"] == "app.editor.font-size")
        #expect(event["value"] == 12)
        let version = try #require(event["version"]?.intValue)
        #expect(version > stored)
        #expect(event["origin"]?["command"] == "beacond")

        let got = try client.parameters("io.beacon.Properties.Get", ["key": "app.editor.font-size"])["property"]
        let listed = try client.parameters("io.beacon.Properties.List", ["prefix": "app.editor"])["properties"]?
            .elements.first { $0["key"] == "app.editor.font-size" }
        let initial = try setup.daemon.connect().call(
            "io.beacon.Properties.Watch", ["patterns": ["app.editor.**"], "initial": true], more: true)["changes"]?
            .elements.first { $0["key"] == "app.editor.font-size" }
        for (view, property) in [("Get", got), ("List", listed), ("Watch initial", initial)] {
            #expect(property?["value"] == 12, "\(view)")
            #expect(property?["version"]?.intValue == version, "\(view)")
            #expect(property?["origin"]?["command"] == "beacond", "\(view)")
        }
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
