import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// The daemon against python-dbusmock's logind on a private bus standing in for the system bus.
@Suite("io.beacon.Lifecycle and the lifecycle bridge in beacond")
struct LifecycleTests {
    static let lifecycleKeys = [
        "session.active", "session.locked", "session.idle", "system.sleeping", "system.shuttingDown",
        "lifecycle.state",
    ]

    /// A private system bus with logind and the session `c1` of uid 1000, active and unlocked.
    final class Fixture {
        let bus: PrivateBus
        let logind: LogindMock
        let daemon: TestDaemon

        init(arguments: [String] = [], inhibitDelayMax: UInt64 = 5_000_000) throws {
            bus = try PrivateBus()
            do {
                try bus.start()
                logind = try LogindMock.start(on: bus, inhibitDelayMax: inhibitDelayMax)
                try logind.addSession("c1")
                daemon = try TestDaemon(
                    arguments: ["--lifecycle-reconnect-ms", "50"] + arguments,
                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "XDG_SESSION_ID": "c1"]
                )
            } catch {
                bus.shutdown()
                throw error
            }
        }

        deinit {
            daemon.kill()
            bus.shutdown()
        }

        func status() throws -> [String: JSONValue] {
            try daemon.connect().parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        }

        func state() throws -> [String: JSONValue] {
            try daemon.connect().parameters("io.beacon.Lifecycle.State")
        }

        /// Waits until the bridge follows the session (another process's state: polled, with a bound).
        func waitForBridge(_ prefix: String = "connected: /org/freedesktop/login1/session/c1") throws {
            try waitUntil("the lifecycle bridge reports \(prefix)", within: .seconds(20)) {
                try status()["lifecycle"]?.stringValue?.hasPrefix(prefix) == true
            }
        }

        /// Waits until the bridge has published `lifecycle.state`: it reports "connected" first, then reads logind's
        /// properties, so a client that starts right after "connected" may still see the state arrive.
        func waitForSessionState(_ value: String = "active") throws {
            try waitUntil("lifecycle.state is \(value)", within: .seconds(20)) {
                let reply = try daemon.connect().call("io.beacon.Properties.Get", ["key": "lifecycle.state"])
                return reply["property"]?["value"]?.stringValue == value
            }
        }
    }

    /// One change as (key, value, old); `nil` stands for absent.
    struct Change: Equatable, CustomStringConvertible {
        var key: String
        var value: JSONValue?
        var old: JSONValue?
        init(_ key: String, _ value: JSONValue?, old: JSONValue? = nil) {
            self.key = key
            self.value = value
            self.old = old
        }
        init(_ item: JSONValue) {
            key = item["key"]?.stringValue ?? ""
            value = item["value"]
            old = item["old"]
        }
        var description: String { "\(key)=\(value.map { "\($0)" } ?? "nil") (was \(old.map { "\($0)" } ?? "nil"))" }
    }

    /// A notification as (name, userInfo).
    struct Note: Equatable, CustomStringConvertible {
        var name: String
        var userInfo: JSONValue?
        init(_ name: String, _ userInfo: JSONValue? = nil) {
            self.name = name
            self.userInfo = userInfo
        }
        init(_ item: JSONValue) {
            name = item["name"]?.stringValue ?? ""
            userInfo = item["userInfo"]
        }
        var description: String { "\(name)\(userInfo.map { " \($0)" } ?? "")" }
    }

    static func resign(_ reason: String) -> Note { Note("lifecycle.willResignActive", ["reason": .string(reason)]) }

    /// Takes the changes of `first` (Watch's first reply) and of the replies after it until every lifecycle key
    /// has a value; returns the latest value of each.
    static func initialState(_ watcher: VarlinkTestClient, first: VarlinkReply) throws -> [String: JSONValue] {
        var values: [String: JSONValue] = [:]
        var reply = first
        while true {
            guard reply.error == nil else { throw TestFailure("Watch failed: \(reply)") }
            for item in reply["changes"]?.elements ?? [] {
                if let key = item["key"]?.stringValue { values[key] = item["value"] }
            }
            if lifecycleKeys.allSatisfy({ values[$0] != nil }) { return values }
            reply = try watcher.receive()
        }
    }

    @Test("properties and notifications of each logind transition, in order, and none at start-up")
    func transitions() throws {
        let fixture = try Fixture()
        let logind = fixture.logind
        let watcher = try fixture.daemon.connect()
        let first = try watcher.call(
            "io.beacon.Properties.Watch",
            ["patterns": ["session.**", "system.**", "lifecycle.**"], "initial": true, "old": true],
            more: true
        )
        #expect(first.error == nil)
        let observer = try fixture.daemon.connect()
        #expect(
            try observer.call("io.beacon.Notifications.Observe", ["patterns": ["lifecycle.**"]], more: true).error
                == nil)

        let initial = try Self.initialState(watcher, first: first)
        // The bridge is connected and sd-bus runs on the daemon's event loop: the main thread (signals) and the
        // loop are all the daemon has.
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(fixture.daemon.pid)/task")
        #expect(threads.count == 2, "threads of beacond: \(threads.count)")
        #expect(
            initial == [
                "session.active": true, "session.locked": false, "session.idle": false, "system.sleeping": false,
                "system.shuttingDown": false, "lifecycle.state": "active",
            ]
        )
        try fixture.waitForBridge()
        #expect(try fixture.status()["sequence"] == 0, "no notification for the state found at start-up")
        let state = try fixture.state()
        #expect(state["state"] == "active")
        #expect(state["sessionActive"] == true)
        #expect(state["participants"] == 0)

        let steps: [(String, () throws -> Void, [Change], [Note])] = [
            (
                "Lock", { try logind.callSession("c1", "Lock") },
                [Change("session.locked", true, old: false), Change("lifecycle.state", "inactive", old: "active")],
                [Self.resign("locked")]
            ),
            (
                "Unlock", { try logind.callSession("c1", "Unlock") },
                [Change("session.locked", false, old: true), Change("lifecycle.state", "active", old: "inactive")],
                [Note("lifecycle.didBecomeActive")]
            ),
            ("Unlock while unlocked", { try logind.callSession("c1", "Unlock") }, [], []),
            (
                "Active off", { try logind.setSessionFlag("c1", "Active", false) },
                [Change("session.active", false, old: true), Change("lifecycle.state", "inactive", old: "active")],
                [Self.resign("sessionInactive")]
            ),
            (
                "Active on", { try logind.setSessionFlag("c1", "Active", true) },
                [Change("session.active", true, old: false), Change("lifecycle.state", "active", old: "inactive")],
                [Note("lifecycle.didBecomeActive")]
            ),
            (
                "PrepareForSleep(true)", { try logind.emitManagerSignal("PrepareForSleep", true) },
                [Change("system.sleeping", true, old: false), Change("lifecycle.state", "inactive", old: "active")],
                [Self.resign("sleep"), Note("lifecycle.willSleep")]
            ),
            (
                "PrepareForSleep(false)", { try logind.emitManagerSignal("PrepareForSleep", false) },
                [Change("system.sleeping", false, old: true), Change("lifecycle.state", "active", old: "inactive")],
                [Note("lifecycle.didWake"), Note("lifecycle.didBecomeActive")]
            ),
            (
                "PrepareForShutdown(true)", { try logind.emitManagerSignal("PrepareForShutdown", true) },
                [
                    Change("system.shuttingDown", true, old: false),
                    Change("lifecycle.state", "inactive", old: "active"),
                ],
                [Self.resign("shutdown"), Note("lifecycle.willTerminate")]
            ),
        ]
        for (name, action, changes, notes) in steps {
            try action()
            // An idle flip marks the end of each step, so that a step that must change nothing is checked too.
            try logind.setSessionFlag("c1", "IdleHint", true)
            try logind.setSessionFlag("c1", "IdleHint", false)
            let wanted = changes + [Change("session.idle", true, old: false), Change("session.idle", false, old: true)]
            let got = try watcher.receiveItems("changes", count: wanted.count).map(Change.init)
            #expect(got == wanted, "step \(name)")
            if !notes.isEmpty {
                let received = try observer.receiveItems("notifications", count: notes.count)
                #expect(received.map(Note.init) == notes, "step \(name)")
                #expect(received.allSatisfy { $0["origin"]?["pid"]?.intValue == Int64(fixture.daemon.pid) })
            }
        }
        #expect(try !observer.hasPendingFrame(within: .milliseconds(300)), "no notification beyond the expected ones")
        #expect(try fixture.state()["systemShuttingDown"] == true)
    }

    @Test("sleep participants hold logind's inhibitor until each released the sleep or left")
    func sleepParticipants() throws {
        let fixture = try Fixture(arguments: ["--lifecycle-sleep-timeout-ms", "30000"], inhibitDelayMax: 60_000_000)
        let logind = fixture.logind
        try fixture.waitForBridge()
        try logind.waitForOpenInhibitors(1)
        // The mock counts the inhibitor before its reply reaches the bridge.
        try waitUntil("the daemon reports the inhibitor", within: .seconds(10)) {
            try fixture.state()["sleepInhibitor"] == true
        }

        let one = try fixture.daemon.connect()
        let two = try fixture.daemon.connect()
        var participants: [Int64] = []
        for client in [one, two] {
            let reply = try client.call("io.beacon.Lifecycle.HoldSleep", ["description": "test"], more: true)
            #expect(reply.error == nil)
            #expect(reply.continues)
            #expect(reply["event"] == "registered")
            participants.append(try #require(reply["participant"]?.intValue))
        }
        let other = try fixture.daemon.connect()
        #expect(try other.parameters("io.beacon.Lifecycle.State")["participants"] == 2)
        let clients = try other.parameters("io.beacon.Daemon.Clients")["clients"]?.elements ?? []
        #expect(clients.filter { $0["stream"] == "io.beacon.Lifecycle.HoldSleep" }.count == 2)
        let unknown = try other.call("io.beacon.Lifecycle.Release", ["participant": 99_999])
        #expect(unknown.error == "io.beacon.Lifecycle.NoSuchParticipant")

        // Sleep 1: both are told, with the configured timeout; the inhibitor stays until the second answers.
        try logind.emitManagerSignal("PrepareForSleep", true)
        for client in [one, two] {
            let reply = try client.receive()
            #expect(reply["event"] == "willSleep")
            #expect(reply["sleep"] == 1)
            #expect(reply["timeoutUsec"] == 30_000_000)
        }
        one.send("io.beacon.Lifecycle.Release", ["participant": .int(participants[0]), "sleep": 1], oneway: true)
        // The oneway call travels on another connection than the State calls: wait for it to be taken.
        try waitUntil("the first participant's release is taken", within: .seconds(10)) {
            try other.parameters("io.beacon.Lifecycle.State")["pending"] == 1
        }
        #expect(try logind.openInhibitors() == 1)
        #expect(try other.parameters("io.beacon.Lifecycle.Release", ["participant": .int(participants[1])]) == [:])
        try logind.waitForOpenInhibitors(0)
        #expect(try other.parameters("io.beacon.Lifecycle.State")["pending"] == nil)

        // Wake-up: both are told, and the daemon takes the inhibitor again.
        try logind.emitManagerSignal("PrepareForSleep", false)
        for client in [one, two] {
            let reply = try client.receive()
            #expect(reply["event"] == "didWake")
            #expect(reply["sleep"] == 1)
        }
        try logind.waitForOpenInhibitors(1)

        // Sleep 2: a late answer to sleep 1 does not count; a participant that leaves counts as released.
        try logind.emitManagerSignal("PrepareForSleep", true)
        for client in [one, two] {
            #expect(try client.receive()["sleep"] == 2)
        }
        #expect(
            try other.parameters("io.beacon.Lifecycle.Release", ["participant": .int(participants[1]), "sleep": 1])
                == [:])
        #expect(try other.parameters("io.beacon.Lifecycle.State")["pending"] == 2)
        one.close()
        try waitUntil("the participant that left is no longer waited for", within: .seconds(10)) {
            try other.parameters("io.beacon.Lifecycle.State")["pending"] == 1
        }
        #expect(try logind.openInhibitors() == 1)
        #expect(
            try other.parameters("io.beacon.Lifecycle.Release", ["participant": .int(participants[1]), "sleep": 2])
                == [:])
        try logind.waitForOpenInhibitors(0)
        try logind.emitManagerSignal("PrepareForSleep", false)
        #expect(try two.receive()["event"] == "didWake")
        try logind.waitForOpenInhibitors(1)

        // Without participants the machine may sleep at once.
        two.close()
        try waitUntil("no participant is left", within: .seconds(10)) {
            try other.parameters("io.beacon.Lifecycle.State")["participants"] == 0
        }
        try logind.emitManagerSignal("PrepareForSleep", true)
        try logind.waitForOpenInhibitors(0)
        #expect(try logind.inhibitCalls() == 3)
    }

    @Test("a participant that does not answer holds sleep back no longer than the sleep timeout")
    func sleepTimeout() throws {
        // logind's own cap (InhibitDelayMaxUSec) is far off, and the default timeout (3 s) is not the one set.
        let fixture = try Fixture(arguments: ["--lifecycle-sleep-timeout-ms", "500"], inhibitDelayMax: 60_000_000)
        let logind = fixture.logind
        try fixture.waitForBridge()
        try logind.waitForOpenInhibitors(1)
        let participant = try fixture.daemon.connect()
        #expect(try participant.call("io.beacon.Lifecycle.HoldSleep", more: true)["event"] == "registered")
        let clock = ContinuousClock()
        let start = clock.now
        try logind.emitManagerSignal("PrepareForSleep", true)
        let told = try participant.receive()
        #expect(told["event"] == "willSleep")
        #expect(told["timeoutUsec"] == 500_000)
        try logind.waitForOpenInhibitors(0)
        let held = clock.now - start
        // Held while the participant was silent, and let go by the configured timeout, not a later one.
        #expect(held >= .milliseconds(450))
        #expect(held < .milliseconds(2500))
    }

    @Test("logind leaving and coming back: the daemon serves on, reports it, and follows the session again")
    func logindRestarts() throws {
        let fixture = try Fixture()
        try fixture.waitForBridge()
        let client = try fixture.daemon.connect()
        fixture.bus.stopMock(name: LogindMock.service)
        try fixture.waitForBridge("disconnected")
        #expect(try client.set("app.value", 1) > 0)
        #expect(try fixture.state()["bridge"]?.stringValue?.hasPrefix("disconnected") == true)

        let logind = try LogindMock.start(on: fixture.bus)
        try logind.addSession("c1")
        try fixture.waitForBridge()
        try logind.waitForOpenInhibitors(1)
        #expect(
            try client.parameters("io.beacon.Properties.Get", ["key": "lifecycle.state"])["property"]?["value"]
                == "active")
        #expect(fixture.daemon.log.contains("lifecycle bridge unavailable"))

        // A restart without logind: the stored lifecycle state of the earlier run is gone, not stale.
        fixture.bus.stopMock(name: LogindMock.service)
        #expect(fixture.daemon.terminate() == 0)
        try fixture.daemon.start()
        let again = try fixture.daemon.connect()
        for key in Self.lifecycleKeys {
            let reply = try again.call("io.beacon.Properties.Get", ["key": .string(key)])
            #expect(reply.error == "io.beacon.Properties.KeyNotFound", "\(key)")
        }
        #expect(try again.parameters("io.beacon.Properties.Get", ["key": "app.value"])["property"]?["value"] == 1)
    }

    @Test("without a system bus the daemon serves and says so; turned off, it says that and refuses HoldSleep")
    func noSystemBus() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        try waitUntil("Status reports the missing bus", within: .seconds(20)) {
            try client.parameters("io.beacon.Daemon.Status")["status"]?["lifecycle"]?.stringValue?
                .hasPrefix("disconnected: ") == true
        }
        #expect(try client.set("app.value", 1) > 0)
        let hold = try daemon.connect().call("io.beacon.Lifecycle.HoldSleep", more: true)
        #expect(hold["event"] == "registered", "a participant may sign up before the bus is there")

        let disabled = try TestDaemon(arguments: ["--lifecycle-enabled", "false"])
        let other = try disabled.connect()
        #expect(try other.parameters("io.beacon.Daemon.Status")["status"]?["lifecycle"] == "disabled")
        #expect(try other.parameters("io.beacon.Lifecycle.State")["bridge"] == "disabled")
        let refused = try other.call("io.beacon.Lifecycle.HoldSleep", more: true)
        #expect(refused.error == "io.beacon.Lifecycle.Unavailable")
        let withoutMore = try other.call("io.beacon.Lifecycle.HoldSleep")
        #expect(withoutMore.error == "org.varlink.service.ExpectedMore")
    }
}
