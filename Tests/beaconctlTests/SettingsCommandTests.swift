import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// describe, reset, dump, load and schemas, and what get, set, list and status show of settings, against the real
/// daemon with schema and lockdown files in temporary directories.
@Suite struct SettingsCommandTests {
    /// kiosk.url forced on line 2, app.editor.theme locked at its default on line 4.
    static let siteLockdown = """
        # Kiosk settings
        kiosk.url = "https://example.org"

        app.editor.theme
        """

    static func editorSetup() throws -> SettingsSetup {
        try SettingsSetup(
            schemaFiles: ["editor.json": SettingsFixtures.editorSchema], lockdownFiles: ["10-site": siteLockdown])
    }

    /// The `type` the daemon's Describe gives `key`: the text TypeMismatch's `expected` and the tables show.
    static func typeSummary(_ key: String, _ setup: SettingsSetup) throws -> String {
        let described = try CLI.run(["describe", key, "--json"], address: setup.address)
        return try #require(try described.json()["type"]?.stringValue)
    }

    @Test func describeShowsTypeDefaultSummaryAndLock() throws {
        let setup = try Self.editorSetup()
        let sizeType = try Self.typeSummary("app.editor.font-size", setup)
        #expect(sizeType.contains("integer"))
        let size = try CLI.run(["describe", "app.editor.font-size"], address: setup.address)
        #expect(size.status == 0, "\(size.stderr)")
        #expect(
            size.lines == [
                "        Key: app.editor.font-size",
                "      Value: 12 (default)",
                "     Stored: no",
                "       Type: \(sizeType)",
                "    Default: 12",
                "    Summary: Font size",
                "Description: The size of the editor's text, in points.",
                "     Schema: \(setup.schemas)/editor.json:3",
                "     Locked: no",
            ])

        let themeType = try Self.typeSummary("app.editor.theme", setup)
        let theme = try CLI.run(["describe", "app.editor.theme"], address: setup.address)
        #expect(
            theme.lines == [
                "    Key: app.editor.theme",
                "  Value: \"light\" (default)",
                " Stored: no",
                "   Type: \(themeType)",
                "Default: \"light\"",
                " Schema: \(setup.schemas)/editor.json:7",
                " Locked: by \(setup.lockdown)/10-site:4 (holds it at its default)",
            ])

        #expect(try CLI.run(["set", "app.editor.recent.a", "notes.txt"], address: setup.address).status == 0)
        let recent = try CLI.run(["describe", "app.editor.recent.a"], address: setup.address)
        #expect(recent.lines.contains("  Value: \"notes.txt\""))
        #expect(recent.lines.contains { $0.hasPrefix(" Stored: yes, version ") })
        #expect(recent.lines.contains(" Schema: \(setup.schemas)/editor.json:8 (pattern app.editor.recent.*)"))

        let forced = try CLI.run(["describe", "kiosk.url"], address: setup.address)
        #expect(forced.lines.contains(" Value: \"https://example.org\" (forced)"))
        #expect(forced.lines.contains("Schema: none (any JSON value)"))
        #expect(forced.lines.contains("Locked: by \(setup.lockdown)/10-site:2 (forces its value)"))

        let json = try CLI.run(["describe", "app.editor.font-size", "--json"], address: setup.address).json()
        #expect(json["defaultValue"] == 12)
        #expect(json["summary"] == "Font size")
        #expect(json["set"] == false)
        #expect(json["source"]?.stringValue == setup.schemas + "/editor.json")

        let invalid = try CLI.run(["describe", "bad..key"], address: setup.address)
        #expect(invalid.status == 1)
        #expect(invalid.stderr.hasPrefix("Error: io.beacon.Properties.InvalidKey: "))
    }

    @Test func setChecksTypesAndLocksAndReportsUnchangedValues() throws {
        let setup = try Self.editorSetup()
        let expected = try Self.typeSummary("app.editor.font-size", setup)
        let wrong = try CLI.run(["set", "app.editor.font-size", "big"], address: setup.address)
        #expect(wrong.status == 1)
        #expect(wrong.stdout.isEmpty)
        #expect(wrong.stderr.hasPrefix("Error: io.beacon.Properties.TypeMismatch: "))
        #expect(wrong.stderr.contains("(\(expected))"), "\(wrong.stderr)")
        let tooLarge = try CLI.run(["set", "app.editor.font-size", "200"], address: setup.address)
        #expect(tooLarge.status == 1)
        #expect(tooLarge.stderr.contains("72"))
        #expect(try CLI.run(["get", "app.editor.font-size"], address: setup.address).stdout == "12\n")

        let locked = try CLI.run(["set", "app.editor.theme", "dark"], address: setup.address)
        #expect(locked.status == 1)
        #expect(
            locked.stderr
                == "Error: io.beacon.Properties.Locked: app.editor.theme is locked by \(setup.lockdown)/10-site:4\n")

        let first = try CLI.run(["set", "app.editor.font-size", "14", "--json"], address: setup.address)
        let version = try #require(try first.json()["version"]?.intValue)
        #expect(try first.json()["unchanged"] == nil)
        let again = try CLI.run(["set", "app.editor.font-size", "14", "--json"], address: setup.address)
        #expect(try again.json() == ["version": .int(version), "unchanged": true])
        let quiet = try CLI.run(["set", "app.editor.font-size", "14"], address: setup.address)
        #expect(quiet.status == 0)
        #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty)
    }

    @Test func resetRecursiveResetsASubtreeAndKeepsLockedKeys() throws {
        let setup = try SettingsSetup(schemaFiles: ["editor.json": SettingsFixtures.editorSchema])
        for (key, value) in [
            ("app.editor", "{\"window\":[800,600]}"), ("app.editor.font-size", "14"), ("app.editor.theme", "dark"),
            ("app.editor.recent.a", "notes.txt"), ("app.other", "1"),
        ] {
            #expect(try CLI.run(["set", key, value], address: setup.address).status == 0)
        }
        // Locked after it was stored. A restart reads the new lockdown file for sure (inotify would too, later).
        try SettingsFixtures.write("app.editor.theme\n", to: setup.lockdown + "/20-theme")
        setup.daemon.kill()
        try setup.daemon.start()

        let reset = try CLI.run(["reset", "-r", "app.editor"], address: setup.address)
        #expect(reset.status == 0)
        #expect(reset.stdout.isEmpty)
        #expect(reset.stderr == "beaconctl: locked, not reset: app.editor.theme\n")

        let list = try CLI.run(["list", "app", "--json"], address: setup.address).json()
        let properties = list["properties"]?.arrayValue ?? []
        let shown = properties.map { [$0["key"] ?? nil, $0["value"] ?? nil, $0["default"] ?? nil] }
        #expect(
            shown == [
                ["app.editor.font-size", 12, true], ["app.editor.theme", "light", true], ["app.other", 1, nil],
            ])
        // The lock holds the key at its default: its stored value is kept, out of sight.
        let theme = try CLI.run(["describe", "app.editor.theme"], address: setup.address)
        #expect(theme.lines.contains(" Stored: yes, version 3 (hidden by the lock)"))
        #expect(theme.lines.contains("  Value: \"light\" (default)"))

        let lockedAlone = try CLI.run(["reset", "app.editor.theme"], address: setup.address)
        #expect(lockedAlone.status == 1)
        #expect(lockedAlone.stderr.contains("app.editor.theme is locked by \(setup.lockdown)/20-theme:1"))

        // Nothing stored is not an error; --json prints the reply.
        let nothing = try CLI.run(["reset", "app.editor.font-size", "--json"], address: setup.address)
        #expect(nothing.status == 0)
        #expect(try nothing.json()["reset"] == [])
        let one = try CLI.run(["reset", "app.other", "--json"], address: setup.address)
        #expect(try one.json()["reset"] == ["app.other"])
        #expect(try CLI.run(["get", "app.other"], address: setup.address).status == 1)
    }

    @Test func schemasListsFilesKeysLocksAndProblems() throws {
        let setup = try SettingsSetup(
            schemaFiles: ["editor.json": SettingsFixtures.editorSchema],
            lockdownFiles: ["10-site": Self.siteLockdown, "20-broken": "app.x = 1\nnot a key!\n"])
        let sizeType = try Self.typeSummary("app.editor.font-size", setup)
        let result = try CLI.run(["schemas"], address: setup.address)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.lines
        #expect(lines.first == "Schemas:")
        #expect(lines.contains(setup.schemas + "/editor.json"))
        let size = try #require(lines.first { $0.hasPrefix("  app.editor.font-size ") })
        let cells = size.split(separator: "  ", omittingEmptySubsequences: true).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        #expect(cells == ["app.editor.font-size", sizeType, "12", "Font size", "3"])
        #expect(lines.contains { $0.hasPrefix("  app.editor.recent.* ") })
        let lockdownHeading = try #require(lines.firstIndex(of: "Lockdown:"))
        #expect(lines[lockdownHeading + 1] == setup.lockdown + "/10-site")
        #expect(lines.contains { $0.hasPrefix("  kiosk.url ") && $0.contains("\"https://example.org\"") })
        let themeRule = try #require(lines[lockdownHeading...].first { $0.hasPrefix("  app.editor.theme ") })
        #expect(themeRule.split(separator: " ") == ["app.editor.theme", "-", "4"])
        let problemsHeading = try #require(lines.firstIndex(of: "Problems:"))
        #expect(lines[(problemsHeading + 1)...].contains { $0.hasPrefix("  \(setup.lockdown)/20-broken:2: ") })

        let json = try CLI.run(["schemas", "--json"], address: setup.address).json()
        let sources = (json["schemas"]?.arrayValue ?? []).compactMap { $0["source"]?.stringValue }
        #expect(sources == [setup.schemas + "/editor.json"])
        #expect(json["lockdown"]?.arrayValue?.count == 2)

        let status = try CLI.run(["status"], address: setup.address)
        #expect(status.stdout.contains("Settings: 1 schema file (3 keys, 0 registrations), 2 lockdown files (3 locks)"))
        #expect(status.lines.contains { $0.contains("Problem: \(setup.lockdown)/20-broken:2: ") })

        let empty = try SettingsSetup()
        let none = try CLI.run(["schemas"], address: empty.address)
        #expect(none.lines == ["Schemas: none", "", "Lockdown: none", "", "Problems: none"])
    }

    /// The issue's test: what dump prints, load stores again in an empty daemon, to the same list.
    @Test func dumpThenLoadIntoAnEmptyDaemonGivesTheSameList() throws {
        let first = try Self.editorSetup()
        // In key order, so that the load (which stores in key order) gives every key the same version.
        for (key, value) in [
            ("app.editor", "{\"window\":[800,600],\"tabs\":{\"width\":4,\"spaces\":true}}"),
            ("app.editor.font-size", "14"),
            ("app.editor.ratio", "0.1"),
            ("app.editor.recent.a", "notes \"quoted\"\n é ✓"),
            ("app.editor.recent.b", "\"2\""),
            ("app.editor.zoom", "null"),
        ] {
            let set = try CLI.run(["set", key, value], address: first.address)
            #expect(set.status == 0, "\(key): \(set.stderr)")
        }
        #expect(try CLI.run(["set", "app.unrelated", "1"], address: first.address).status == 0)

        let dump = try CLI.run(["dump", "app.editor"], address: first.address)
        #expect(dump.status == 0)
        #expect(dump.stdout.hasPrefix("{\n  \"\": {\n"))
        let values = try #require(try dump.json().objectValue)
        #expect(values.keys.sorted() == ["", "font-size", "ratio", "recent.a", "recent.b", "zoom"])

        let second = try SettingsSetup(sameFilesAs: first)
        #expect(try CLI.run(["list", "app", "--json"], address: second.address).json()["version"] == 0)
        let load = try CLI.run(["load", "app.editor", "-"], address: second.address, input: Array(dump.stdout.utf8))
        #expect(load.status == 0, "\(load.stderr)")
        #expect(load.stdout.isEmpty && load.stderr.isEmpty)

        let before = try CLI.run(["list", "app.editor", "--json"], address: first.address)
        let after = try CLI.run(["list", "app.editor", "--json"], address: second.address)
        #expect(before.status == 0 && after.status == 0)
        // Equal but for when and by whom the values were stored.
        func comparable(_ reply: JSONValue) -> JSONValue {
            .array(
                (reply["properties"]?.arrayValue ?? []).map { property in
                    var members = property.objectValue ?? [:]
                    members["modifiedUsec"] = nil
                    members["origin"] = nil
                    return .object(members)
                })
        }
        let listed = try comparable(before.json())
        #expect(try comparable(after.json()) == listed)
        // The defaults and the lock are part of what is compared.
        #expect(listed.arrayValue?.count == 7)
        #expect(listed.arrayValue?.contains { $0["key"] == "app.editor.theme" && $0["locked"] != nil } == true)
        #expect(try after.json()["version"] == 6)
        #expect(try CLI.run(["get", "app.unrelated"], address: second.address).status == 1)

        // Loaded again, the values already stored count as unchanged. (Only the values that are not objects: the
        // daemon compares stored values by their text, and an object's members come in no fixed order.)
        let file = second.root + "/editor-dump.json"
        try JSONValue.object(values.filter { $0.value.objectValue == nil }).jsonString.write(
            toFile: file, atomically: false, encoding: .utf8)
        let again = try CLI.run(["load", "app.editor", file, "--json"], address: second.address)
        #expect(try again.json()["changed"] == 0)
        #expect(try again.json()["unchanged"] == 5)

        // A whole dump, loaded with the empty prefix.
        let all = try CLI.run(["dump"], address: first.address)
        let third = try SettingsSetup(sameFilesAs: first)
        try all.stdout.write(toFile: file, atomically: false, encoding: .utf8)
        #expect(try CLI.run(["load", "", file], address: third.address).status == 0)
        #expect(try CLI.run(["dump"], address: third.address).stdout == all.stdout)
    }

    @Test func loadWithOneBadValueStoresNothing() throws {
        let setup = try Self.editorSetup()
        let file = setup.root + "/values.json"
        try #"{"font-size": 14, "recent.a": "ok", "recent.b": 3, "window": [1, 2]}"#.write(
            toFile: file, atomically: false, encoding: .utf8)
        let refused = try CLI.run(["load", "app.editor", file], address: setup.address)
        #expect(refused.status == 1)
        #expect(refused.stdout.isEmpty)
        #expect(
            refused.stderr.hasPrefix("Error: io.beacon.Properties.TypeMismatch: the value for app.editor.recent.b "))
        #expect(try CLI.run(["dump"], address: setup.address).stdout == "{}\n")

        for (text, message) in [
            ("{\"font-size\": 14,", "cannot parse \(file): "), ("[14]", "is not a JSON object"), ("", "cannot parse"),
        ] {
            try text.write(toFile: file, atomically: false, encoding: .utf8)
            let bad = try CLI.run(["load", "app.editor", file], address: setup.address)
            #expect(bad.status == 2, "\(text)")
            #expect(bad.stderr.contains(message), "\(text): \(bad.stderr)")
        }
        let missing = try CLI.run(["load", "app.editor", setup.root + "/none.json"], address: setup.address)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot open \(setup.root)/none.json"))
        #expect(try CLI.run(["dump"], address: setup.address).stdout == "{}\n")

        // A locked key is skipped and named; the others are stored.
        try #"{"url": "https://mine.example", "zoom": 2}"#.write(toFile: file, atomically: false, encoding: .utf8)
        let partly = try CLI.run(["load", "kiosk", file], address: setup.address)
        #expect(partly.status == 0)
        #expect(partly.stderr == "beaconctl: locked, not loaded: kiosk.url\n")
        #expect(try CLI.run(["dump", "kiosk"], address: setup.address).json() == ["zoom": 2])
    }

    @Test func getAndListMarkDefaultsAndLocks() throws {
        let setup = try Self.editorSetup()
        // In a pipe, the value alone, as scripts read it.
        #expect(try CLI.run(["get", "app.editor.theme"], address: setup.address).stdout == "\"light\"\n")
        #expect(try CLI.run(["get", "-r", "app.editor.theme"], address: setup.address).stdout == "light\n")
        let json = try CLI.run(["get", "app.editor.theme", "--json"], address: setup.address).json()
        #expect(json["property"]?["default"] == true)
        #expect(json["property"]?["locked"]?["line"] == 4)

        // On a terminal, marked.
        let lock = "locked by \(setup.lockdown)/10-site:4"
        #expect(
            try Self.runOnTerminal(["get", "--address", setup.address, "app.editor.theme"])
                == "\"light\" (default, \(lock))\n")
        #expect(
            try Self.runOnTerminal(["get", "--address", setup.address, "app.editor.font-size"]) == "12 (default)\n")
        #expect(try CLI.run(["set", "app.editor.font-size", "14"], address: setup.address).status == 0)
        #expect(try Self.runOnTerminal(["get", "--address", setup.address, "app.editor.font-size"]) == "14\n")

        let list = try CLI.run(["list", "app.editor"], address: setup.address)
        #expect(list.lines.first?.hasSuffix("  SETTINGS") == true)
        #expect(list.lines.count == 3)
        #expect(list.lines.contains { $0.hasPrefix("app.editor.theme ") && $0.hasSuffix("  default, \(lock)") })
        let stored = try #require(list.lines.first { $0.hasPrefix("app.editor.font-size ") })
        #expect(!stored.contains("default"))
        // A list without defaults or locks has no settings column.
        #expect(try CLI.run(["set", "user.name", "Ada"], address: setup.address).status == 0)
        let plain = try CLI.run(["list", "user"], address: setup.address)
        #expect(plain.lines.first?.hasSuffix("ORIGIN") == true)
    }

    @Test(arguments: [
        ["describe"], ["reset"], ["reset", "a", "b"], ["load"], ["load", "a", "b", "c"], ["dump", "a", "b"],
        ["schemas", "a"],
    ])
    func usageErrorsExitTwo(arguments: [String]) throws {
        let result = try CLI.run(
            arguments, address: nil, environment: ["BEACON_ADDRESS": "unix:/nonexistent/beacon.sock"])
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("Usage: beaconctl \(arguments[0])"))
    }

    // MARK: Running beaconctl with other standard streams

    /// Runs beaconctl with its standard output on a new pseudo-terminal, without colours; returns what it printed
    /// there, line ends as "\n".
    static func runOnTerminal(_ arguments: [String]) throws -> String {
        // The pseudo-terminal functions of the C library are not imported (they need _XOPEN_SOURCE): looked up.
        typealias Control = @convention(c) (Int32) -> Int32
        typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
        let grant = try libcFunction("grantpt", as: Control.self)
        let unlock = try libcFunction("unlockpt", as: Control.self)
        let ptsname = try libcFunction("ptsname_r", as: Name.self)
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0 else { throw TestFailure("/dev/ptmx: \(String(cString: strerror(errno)))") }
        defer { close(master) }
        var name = [CChar](repeating: 0, count: 256)
        guard grant(master) == 0, unlock(master) == 0, ptsname(master, &name, name.count) == 0 else {
            throw TestFailure("cannot set up a pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        // This process holds the terminal open too, until the child has ended: its output stays readable.
        var terminal: Int32 = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else { throw TestFailure("cannot open the pseudo-terminal") }
        defer { if terminal >= 0 { close(terminal) } }
        var variables = CLI.inheritedEnvironment
        variables["NO_COLOR"] = "1"
        // Standard input and error on /dev/null; standard output opens the terminal by its name (without becoming
        // the child's controlling terminal: the child does not lead a session).
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let child = try ChildProcess(
            try BuiltProducts.beaconctl(), arguments, environment: variables, output: .file(path))
        guard let status = child.wait(within: .seconds(60)) else {
            child.signal(SIGKILL)
            child.wait()
            throw TestFailure("beaconctl \(arguments) did not finish within 60 s")
        }
        close(terminal)
        terminal = -1
        // With no writer left, a read returns what is buffered, then fails with EIO.
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var entry = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 30_000) > 0 else { break }
            let count = chunk.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        guard status == 0 else { throw TestFailure("beaconctl \(arguments) exited with status \(status)") }
        return String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
    }

    /// The C library's function `name`, as a `type`.
    private static func libcFunction<Function>(_ name: String, as type: Function.Type) throws -> Function {
        guard let library = dlopen(nil, RTLD_NOW), let symbol = dlsym(library, name) else {
            throw TestFailure("no \(name) in the C library")
        }
        return unsafeBitCast(symbol, to: type)
    }
}
