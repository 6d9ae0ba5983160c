import BeaconSystemd
import Testing

@Suite("LifecycleSnapshot transitions")
struct LogindLifecycleSnapshotTests {
    @Test("start-up: every property, no notification")
    func startup() {
        let events = LifecycleSnapshot(sessionActive: true, sessionLocked: true).events(from: nil)
        #expect(events.count == LifecycleProperty.allCases.count)
        #expect(events.first == .property(.sessionActive, .bool(true)))
        #expect(events.last == .property(.lifecycleState, .string("inactive")))
    }

    @Test("no change, no event")
    func unchanged() {
        let snapshot = LifecycleSnapshot(sessionActive: true, sessionIdle: true)
        #expect(snapshot.events(from: snapshot).isEmpty)
    }

    @Test("several causes at once give one resignation with the strongest reason")
    func oneResignation() {
        let old = LifecycleSnapshot(sessionActive: true)
        let new = LifecycleSnapshot(sessionActive: true, sessionLocked: true, systemSleeping: true)
        let expected: [LogindEvent] = [
            .notification(.willResignActive(reason: .sleep)), .notification(.willSleep),
            .property(.sessionLocked, .bool(true)), .property(.systemSleeping, .bool(true)),
            .property(.lifecycleState, .string("inactive")),
        ]
        #expect(new.events(from: old) == expected)
    }

    @Test("waking up while still locked: didWake without didBecomeActive")
    func wakeLocked() {
        let old = LifecycleSnapshot(sessionActive: true, sessionLocked: true, systemSleeping: true)
        let new = LifecycleSnapshot(sessionActive: true, sessionLocked: true)
        #expect(new.events(from: old) == [.property(.systemSleeping, .bool(false)), .notification(.didWake)])
    }

    @Test("notification names and user info")
    func names() {
        let note = LifecycleNotification.willResignActive(reason: .sessionInactive)
        #expect(note.name == "lifecycle.willResignActive")
        #expect(note.userInfo == ["reason": "sessionInactive"])
        #expect(LifecycleNotification.didWake.userInfo.isEmpty)
    }
}
