import BeaconProtocol
import BeaconTestSupport
import Testing

@Suite("Watch streams, since replay and ephemeral properties")
struct WatchTests {
    @Test("Watch sends initial values first, then changes with old values, deletions and origins")
    func watch() throws {
        let daemon = try TestDaemon()
        let writer = try daemon.connect()
        let v1 = try writer.set("power.battery.level", 80)
        try writer.set("power.ac", true)
        try writer.set("other", "x")

        let watcher = try daemon.connect()
        let first = try watcher.call(
            "io.beacon.Properties.Watch",
            ["patterns": ["power.battery.*", "power.ac", "apps.*.state"], "initial": true, "old": true],
            more: true
        )
        #expect(first.error == nil)
        #expect(first.continues)
        let initial = first["changes"]?.elements ?? []
        #expect(initial.map { $0["key"]?.stringValue } == ["power.battery.level", "power.ac"])
        #expect(initial.first?["value"] == 80)
        #expect(initial.first?["version"]?.intValue == v1)
        #expect(initial.first?["deleted"] == false)
        let current = try #require(first["version"]?.intValue)

        let v2 = try writer.set("power.battery.level", 75)
        try writer.set("apps.mail.state", "running")
        try writer.set("apps.mail.state.detail", "ignored")
        _ = try writer.parameters("io.beacon.Properties.Unset", ["key": "power.ac"])

        let changes = try watcher.receiveItems("changes", count: 3)
        #expect(changes.map { $0["key"]?.stringValue } == ["power.battery.level", "apps.mail.state", "power.ac"])
        #expect(changes[0]["value"] == 75)
        #expect(changes[0]["old"] == 80)
        #expect(changes[0]["version"]?.intValue == v2)
        #expect(v2 > current)
        #expect(changes[0]["origin"]?["pid"]?.intValue == testPID)
        #expect(changes[1]["old"] == nil)
        #expect(changes[2]["deleted"] == true)
        #expect(changes[2]["value"] == nil)
        #expect(changes[2]["old"] == true)
        let versions = changes.compactMap { $0["version"]?.intValue }
        #expect(versions == versions.sorted())
    }

    @Test("Watch with origin false leaves the origin out of initial, replayed and live changes, and only for it")
    func withoutOrigin() throws {
        let daemon = try TestDaemon()
        let writer = try daemon.connect()
        let since = try writer.set("o.a", 1)
        try writer.set("o.b", 2)

        let lean = try daemon.connect()
        let first = try lean.call(
            "io.beacon.Properties.Watch", ["patterns": ["o.*"], "initial": true, "origin": false], more: true)
        #expect(first["changes"]?.elements.count == 2)
        #expect(first["changes"]?.elements.allSatisfy { $0["origin"] == nil && $0["version"] != nil } == true)
        let replay = try daemon.connect()
        let replayed = try replay.call(
            "io.beacon.Properties.Watch", ["patterns": ["o.*"], "since": .int(since), "origin": false], more: true)
        #expect(replayed["changes"]?.elements.map { $0["key"]?.stringValue } == ["o.b"])
        #expect(replayed["changes"]?.elements.first?["origin"] == nil)
        // origin must be a boolean: anything else is refused, naming it, and the connection goes on.
        let other = try daemon.connect()
        let refused = try other.call("io.beacon.Properties.Watch", ["patterns": ["o.*"], "origin": "no"], more: true)
        #expect(refused.error == "org.varlink.service.InvalidParameter")
        #expect(refused.parameters["parameter"] == "origin")
        #expect(try other.parameters("io.beacon.Properties.Get", ["key": "o.a"])["property"]?["value"] == 1)
        let full = try daemon.connect()
        _ = try full.call("io.beacon.Properties.Watch", ["patterns": ["o.*"], "old": true], more: true)
        let plain = try daemon.connect()
        _ = try plain.call("io.beacon.Properties.Watch", ["patterns": ["o.*"]], more: true)

        try writer.set("o.a", 3)
        _ = try writer.parameters("io.beacon.Properties.Unset", ["key": "o.b"])
        for watcher in [lean, replay] {
            let changes = try watcher.receiveItems("changes", count: 2)
            #expect(changes.map { $0["key"]?.stringValue } == ["o.a", "o.b"])
            #expect(changes[0]["value"] == 3 && changes[0]["deleted"] == false && changes[0]["origin"] == nil)
            #expect(changes[1]["deleted"] == true && changes[1]["origin"] == nil)
        }
        // The same changes for watchers that did not ask to leave origins out still carry them.
        let changes = try full.receiveItems("changes", count: 2)
        #expect(changes.allSatisfy { $0["origin"]?["pid"]?.intValue == testPID })
        #expect(changes[0]["old"] == 1)
        let plainChanges = try plain.receiveItems("changes", count: 2)
        #expect(plainChanges.allSatisfy { $0["origin"]?["pid"]?.intValue == testPID && $0["old"] == nil })
    }

    @Test("Watch without initial starts with an empty list and the current version")
    func firstReplyWithoutInitial() throws {
        let daemon = try TestDaemon()
        let writer = try daemon.connect()
        let version = try writer.set("a.b", 1)
        let watcher = try daemon.connect()
        let first = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["**"]], more: true)
        #expect(first["changes"] == [])
        #expect(first["version"]?.intValue == version)
        #expect(first["resync"] == nil)
        try writer.set("a.b", 2)
        let changes = try watcher.receiveItems("changes", count: 1)
        #expect(changes.first?["value"] == 2)
        #expect(changes.first?["old"] == nil)
    }

    @Test("since replays every change after a version, deletions included, also across a restart")
    func sinceReplay() throws {
        let daemon = try TestDaemon()
        let writer = try daemon.connect()
        try writer.set("prefs.theme", "dark")
        try writer.set("prefs.font", "mono")
        try writer.set("prefs.size", 12)

        var watcher: VarlinkTestClient? = try daemon.connect()
        let first = try watcher!.call("io.beacon.Properties.Watch", ["patterns": ["prefs.**"]], more: true)
        let seen = try #require(first["version"]?.intValue)
        watcher = nil  // disconnect

        try writer.set("prefs.theme", "light")
        _ = try writer.parameters("io.beacon.Properties.Unset", ["key": "prefs.font"])
        try writer.set("prefs.new", true)
        try writer.set("unrelated", 1)
        try writer.set("prefs.new", false)

        func replay(_ client: VarlinkTestClient) throws -> [JSONValue] {
            let reply = try client.call(
                "io.beacon.Properties.Watch",
                ["patterns": ["prefs.**"], "since": .int(seen)],
                more: true
            )
            #expect(reply.error == nil)
            #expect(reply["resync"] == nil)
            return reply["changes"]?.elements ?? []
        }
        let expected = ["prefs.theme=false", "prefs.font=true", "prefs.new=false"]
        func summary(_ changes: [JSONValue]) -> [String] {
            changes.map { change -> String in
                let key = change["key"]?.stringValue ?? ""
                let deleted = change["deleted"]?.boolValue ?? false
                return "\(key)=\(deleted)"
            }
        }
        let changes = try replay(try daemon.connect())
        #expect(summary(changes) == expected)
        #expect(changes.last?["value"] == false)

        // The same replay after a restart: deletions are remembered in the store.
        #expect(daemon.terminate() == 0)
        try daemon.start()
        let again = try replay(try daemon.connect())
        #expect(summary(again) == expected)

        // A version from the future (for example a wiped store) makes the client resync from the full state.
        let resync = try daemon.connect().call(
            "io.beacon.Properties.Watch",
            ["patterns": ["prefs.**"], "since": 1_000_000_000],
            more: true
        )
        #expect(resync["resync"] == true)
        #expect(
            resync["changes"]?.elements.compactMap { $0["key"]?.stringValue }.sorted() == [
                "prefs.new", "prefs.size", "prefs.theme",
            ])
    }

    @Test("ephemeral properties vanish with a change event when their connection closes")
    func ephemeralCleanup() throws {
        let daemon = try TestDaemon()
        let watcher = try daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["presence.**"]], more: true)

        var owner: VarlinkTestClient? = try daemon.connect()
        try owner!.set("presence.editor", "busy", ephemeral: true)
        try owner!.set("presence.persistent", "stays")
        let observer = try daemon.connect()
        let property = try observer.parameters("io.beacon.Properties.Get", ["key": "presence.editor"])
        #expect(property["property"]?["ephemeral"] == true)
        let clients = try observer.parameters("io.beacon.Daemon.Clients")["clients"]?.elements ?? []
        #expect(clients.contains { $0["ephemeral"] == 1 })

        let created = try watcher.receiveItems("changes", count: 2)
        #expect(created.map { $0["key"]?.stringValue } == ["presence.editor", "presence.persistent"])

        owner = nil  // the connection closes
        let deleted = try watcher.receiveItems("changes", count: 1)
        #expect(deleted.first?["key"] == "presence.editor")
        #expect(deleted.first?["deleted"] == true)
        #expect(deleted.first?["origin"]?["pid"]?.intValue == testPID)

        let gone = try observer.call("io.beacon.Properties.Get", ["key": "presence.editor"])
        #expect(gone.error == "io.beacon.Properties.KeyNotFound")
        let kept = try observer.call("io.beacon.Properties.Get", ["key": "presence.persistent"])
        #expect(kept.error == nil)
    }
}
