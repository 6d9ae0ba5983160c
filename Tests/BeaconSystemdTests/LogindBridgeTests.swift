import BeaconSystemd
import BeaconTestSupport
import Foundation
import Testing

@Suite("LogindBridge against python-dbusmock's logind on a private bus")
struct LogindBridgeTests {
    @Test("start-up reports the state only; each edge gives its notifications once, in order")
    func lifecycleSequence() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus)
        try logind.addSession("c1")

        let bridge = try LogindBridge(configuration: .test(bus: bus), logger: .test)
        defer { bridge.shutdown() }
        let recorder = EventRecorder(bridge.events)
        try bridge.start()

        var expected = LogindEvent.initial(session: "c1", LifecycleSnapshot(sessionActive: true))
        #expect(await recorder.next(expected.count) == expected)
        try logind.waitForOpenInhibitors(1)
        // The mock counts the inhibitor before its reply reaches the bridge's thread.
        try waitUntil("the bridge holds the inhibitor", within: .seconds(10)) { bridge.status.sleepInhibitorHeld }
        #expect(bridge.status.inhibitDelayMax == .seconds(5))

        let steps: [(String, () throws -> Void, [LogindEvent])] = [
            (
                "Lock", { try logind.callSession("c1", "Lock") },
                [.note(.willResignActive(reason: .locked)), .flag(.sessionLocked, true), .state(false)]
            ),
            (
                "Unlock", { try logind.callSession("c1", "Unlock") },
                [.flag(.sessionLocked, false), .state(true), .note(.didBecomeActive)]
            ),
            (
                "LockedHint on", { try logind.setSessionFlag("c1", "LockedHint", true) },
                [.note(.willResignActive(reason: .locked)), .flag(.sessionLocked, true), .state(false)]
            ),
            ("Lock while locked", { try logind.callSession("c1", "Lock") }, []),
            (
                "LockedHint off", { try logind.setSessionFlag("c1", "LockedHint", false) },
                [.flag(.sessionLocked, false), .state(true), .note(.didBecomeActive)]
            ),
            (
                "Active off", { try logind.setSessionFlag("c1", "Active", false) },
                [.note(.willResignActive(reason: .sessionInactive)), .flag(.sessionActive, false), .state(false)]
            ),
            (
                "Active on", { try logind.setSessionFlag("c1", "Active", true) },
                [.flag(.sessionActive, true), .state(true), .note(.didBecomeActive)]
            ),
        ]
        for (name, action, events) in steps {
            try action()
            // An idle flip after each step marks its end (and checks IdleHint), so a step that must post
            // nothing is checked too.
            try logind.setSessionFlag("c1", "IdleHint", true)
            try logind.setSessionFlag("c1", "IdleHint", false)
            let wanted = events + [.flag(.sessionIdle, true), .flag(.sessionIdle, false)]
            let got = await recorder.next(wanted.count)
            #expect(got == wanted, "step \(name)")
            expected += wanted
        }

        // Sleep: the inhibitor stays until the one announced participant answers, then the machine may sleep.
        try logind.emitManagerSignal("PrepareForSleep", true)
        var wanted: [LogindEvent] = [
            .note(.willResignActive(reason: .sleep)), .note(.willSleep), .flag(.systemSleeping, true), .state(false),
        ]
        #expect(await recorder.next(wanted.count) == wanted)
        expected += wanted
        #expect(try logind.openInhibitors() == 1)
        bridge.beginSleep(participants: 2, timeout: .seconds(60))
        bridge.sleepParticipantDidAnswer()
        try logind.setSessionFlag("c1", "IdleHint", true)
        #expect(await recorder.next(1) == [.flag(.sessionIdle, true)])
        expected += [.flag(.sessionIdle, true)]
        try waitUntil("one participant is pending", within: .seconds(10)) {
            bridge.status.sleepParticipantsPending == 1
        }
        #expect(try logind.openInhibitors() == 1, "one of two participants answered")
        bridge.sleepParticipantDidAnswer()
        try logind.waitForOpenInhibitors(0)
        try waitUntil("the bridge let go of the inhibitor", within: .seconds(10)) { !bridge.status.sleepInhibitorHeld }

        try logind.emitManagerSignal("PrepareForSleep", false)
        wanted = [.flag(.systemSleeping, false), .state(true), .note(.didWake), .note(.didBecomeActive)]
        #expect(await recorder.next(wanted.count) == wanted)
        expected += wanted
        try logind.waitForOpenInhibitors(1)
        #expect(try logind.inhibitCalls() == 2)

        try logind.emitManagerSignal("PrepareForShutdown", true)
        wanted = [
            .note(.willResignActive(reason: .shutdown)), .note(.willTerminate), .flag(.systemShuttingDown, true),
            .state(false),
        ]
        #expect(await recorder.next(wanted.count) == wanted)
        expected += wanted

        try logind.setSessionFlag("c1", "IdleHint", false)
        expected += [.flag(.sessionIdle, false)]
        #expect(await recorder.next(1) == [.flag(.sessionIdle, false)])
        #expect(recorder.all == expected)
    }

    @Test("a locked, sleeping system at start-up gives properties but no notification")
    func startupStateIsNotAnEdge() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus)
        try logind.addSession("c1")
        try logind.setSessionFlag("c1", "LockedHint", true)
        try logind.setManagerFlag("PreparingForSleep", true)

        let bridge = try LogindBridge(configuration: .test(bus: bus), logger: .test)
        defer { bridge.shutdown() }
        let recorder = EventRecorder(bridge.events)
        try bridge.start()

        let initial = LogindEvent.initial(
            session: "c1", LifecycleSnapshot(sessionActive: true, sessionLocked: true, systemSleeping: true))
        #expect(await recorder.next(initial.count) == initial)
        // While the system is sleeping no inhibitor is taken; after wake-up it is.
        try logind.emitManagerSignal("PrepareForSleep", false)
        #expect(await recorder.next(2) == [.flag(.systemSleeping, false), .note(.didWake)])
        try logind.waitForOpenInhibitors(1)
        #expect(try logind.inhibitCalls() == 1)
        #expect(recorder.untaken.isEmpty)
    }

    @Test("the inhibitor is released after the sleep delay, capped by InhibitDelayMaxUSec")
    func sleepDelayIsCapped() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus, inhibitDelayMax: 200_000)
        try logind.addSession("c1")

        let bridge = try LogindBridge(configuration: .test(bus: bus, sleepDelay: .seconds(600)), logger: .test)
        defer { bridge.shutdown() }
        let recorder = EventRecorder(bridge.events)
        try bridge.start()
        _ = await recorder.next(7)
        try logind.waitForOpenInhibitors(1)
        #expect(bridge.status.inhibitDelayMax == .milliseconds(200))

        let clock = ContinuousClock()
        let start = clock.now
        try logind.emitManagerSignal("PrepareForSleep", true)
        #expect(await recorder.next(4).contains(.note(.willSleep)))
        // Nobody announces participants: the bridge lets go after 200 ms, not after the configured 600 s.
        try logind.waitForOpenInhibitors(0)
        #expect(clock.now - start < .seconds(10))
        #expect(try logind.inhibitCalls() == 1)
    }

    @Test("beginSleep with no participants releases at once; releaseSleepInhibitor works without a count")
    func explicitRelease() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus)
        try logind.addSession("c1")

        let bridge = try LogindBridge(configuration: .test(bus: bus), logger: .test)
        defer { bridge.shutdown() }
        let recorder = EventRecorder(bridge.events)
        try bridge.start()
        _ = await recorder.next(7)
        try logind.waitForOpenInhibitors(1)

        try logind.emitManagerSignal("PrepareForSleep", true)
        _ = await recorder.next(4)
        bridge.beginSleep(participants: 0, timeout: .seconds(60))
        try logind.waitForOpenInhibitors(0)
        try logind.emitManagerSignal("PrepareForSleep", false)
        _ = await recorder.next(4)
        try logind.waitForOpenInhibitors(1)

        try logind.emitManagerSignal("PrepareForSleep", true)
        _ = await recorder.next(4)
        #expect(bridge.status.sleepInProgress)
        bridge.releaseSleepInhibitor()
        try logind.waitForOpenInhibitors(0)
        #expect(try logind.inhibitCalls() == 2)
    }

    @Test("without XDG_SESSION_ID the user's display session is used, else GetSessionByPID")
    func sessionDiscovery() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus)
        try logind.addSession("c7")
        try logind.setDisplay(session: "c7")

        let byDisplay = try LogindBridge(configuration: .test(bus: bus, sessionID: nil), logger: .test)
        defer { byDisplay.shutdown() }
        let displayEvents = EventRecorder(byDisplay.events)
        try byDisplay.start()
        #expect(await displayEvents.next(1) == [.bridgeState(.connected(sessionPath: LogindMock.sessionPath("c7")))])

        // An unknown session id, no display session: GetSessionByPID decides.
        try logind.addSession("c9")
        try logind.setDisplay(session: "c9")
        try logind.setDisplay(session: nil)
        try logind.addManagerMethod(
            "GetSessionByPID", in: "u", out: "o", code: "ret = '/org/freedesktop/login1/session/c9'")
        try logind.addManagerMethod(
            "GetSession", in: "s", out: "o",
            code: "raise dbus.exceptions.DBusException('no such session', name='org.freedesktop.login1.NoSuchSession')")
        let byPID = try LogindBridge(configuration: .test(bus: bus, sessionID: "nope"), logger: .test)
        defer { byPID.shutdown() }
        let pidEvents = EventRecorder(byPID.events)
        try byPID.start()
        #expect(await pidEvents.next(1) == [.bridgeState(.connected(sessionPath: LogindMock.sessionPath("c9")))])
    }

    @Test("no session, then the session vanishes and a new one appears: noSession and back, by itself")
    func sessionComesAndGoes() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus)

        let bridge = try LogindBridge(configuration: .test(bus: bus, sessionID: nil), logger: .test)
        defer { bridge.shutdown() }
        let recorder = EventRecorder(bridge.events)
        try bridge.start()
        let first = await recorder.next(7)
        guard case .bridgeState(.noSession)? = first.first else {
            Issue.record("expected noSession first, got \(first)")
            return
        }
        #expect(Array(first.dropFirst()) == Array(LogindEvent.initial(session: "x", LifecycleSnapshot()).dropFirst()))

        try logind.addSession("c2")
        try logind.setDisplay(session: "c2")
        try logind.emitSessionNew("c2")
        var wanted: [LogindEvent] = [
            .bridgeState(.connected(sessionPath: LogindMock.sessionPath("c2"))), .flag(.sessionActive, true),
            .state(true), .note(.didBecomeActive),
        ]
        #expect(await recorder.next(wanted.count) == wanted)

        try logind.setDisplay(session: nil)
        try logind.removeSession("c2")
        let removed = await recorder.next(4)
        guard case .bridgeState(.noSession)? = removed.first else {
            Issue.record("expected noSession, got \(removed)")
            return
        }
        wanted = [
            removed[0], .note(.willResignActive(reason: .sessionInactive)), .flag(.sessionActive, false), .state(false),
        ]
        #expect(removed == wanted)

        // The new session is found by the retry with backoff, without a SessionNew signal.
        try logind.addSession("c3")
        try logind.setDisplay(session: "c3")
        wanted = [
            .bridgeState(.connected(sessionPath: LogindMock.sessionPath("c3"))), .flag(.sessionActive, true),
            .state(true), .note(.didBecomeActive),
        ]
        #expect(await recorder.next(wanted.count) == wanted)
    }

    @Test("no bus, then logind restarting: the bridge reports it and reconnects by itself")
    func busAndLogindComeAndGo() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }

        let bridge = try LogindBridge(configuration: .test(bus: bus), logger: .test)
        defer { bridge.shutdown() }
        let recorder = EventRecorder(bridge.events)
        try bridge.start()
        let first = await recorder.next(1)
        guard case .bridgeState(.disconnected(let reason))? = first.first else {
            Issue.record("expected disconnected first, got \(first)")
            return
        }
        #expect(reason.contains("cannot connect"))

        // Bus and logind appear; the bridge finds them by itself (it may see logind before its session).
        try bus.start()
        var logind = try LogindMock.start(on: bus)
        try logind.addSession("c1")
        let connected = LogindEvent.bridgeState(.connected(sessionPath: LogindMock.sessionPath("c1")))
        _ = await recorder.collect(until: { $0 == connected })
        try logind.setSessionFlag("c1", "IdleHint", true)
        _ = await recorder.collect(until: { $0 == .flag(.sessionIdle, true) })
        #expect(bridge.status.snapshot == LifecycleSnapshot(sessionActive: true, sessionIdle: true))
        try logind.waitForOpenInhibitors(1)

        bus.stopMock(name: LogindMock.service)
        #expect(await recorder.next(1) == [.bridgeState(.disconnected(reason: "logind left the bus"))])
        #expect(!bridge.status.sleepInhibitorHeld)

        // logind comes back and the session was locked meanwhile: that difference is reported as an edge.
        logind = try LogindMock.start(on: bus)
        try logind.addSession("c1")
        try logind.setSessionFlag("c1", "LockedHint", true)
        let back = await recorder.collect(until: { $0 == .flag(.sessionLocked, true) })
        #expect(back.contains(connected))
        // Depending on when the bridge saw logind, its session, and the lock (three separate steps of the mock),
        // there is one resignation ("locked" or "sessionInactive") and no return to active; or, when the
        // bridge saw the session before it was locked, an inactive spell, one return to active, and then the
        // resignation for the lock. Every reported edge matches a state the mock really passed through.
        let resignations = back.filter {
            if case .notification(.willResignActive) = $0 { return true }
            return false
        }
        let returns = back.filter { $0 == .note(.didBecomeActive) }.count
        #expect(returns <= 1, "\(back)")
        #expect(resignations.count == 1 + returns, "\(back)")
        if returns == 1 {
            let lastResign = back.lastIndex {
                if case .notification(.willResignActive) = $0 { return true }
                return false
            }
            let lastReturn = back.lastIndex(of: .note(.didBecomeActive))
            #expect(lastResign! > lastReturn!, "\(back)")
        }
        // The lock may be seen before the new session's other properties are read: the snapshot follows them.
        let expected = LifecycleSnapshot(sessionActive: true, sessionLocked: true)
        try waitUntil("the snapshot is active and locked", within: .seconds(10)) { bridge.status.snapshot == expected }
        #expect(bridge.status.state == .connected(sessionPath: LogindMock.sessionPath("c1")))
        try logind.waitForOpenInhibitors(1)
    }
}
