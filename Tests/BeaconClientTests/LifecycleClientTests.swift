import BeaconClient
import BeaconTestSupport
import Signals
import Testing

@Suite("BeaconClient's lifecycle against beacond and dbusmock's logind")
struct LifecycleClientTests {
    @Test("lifecycle signals follow logind; holdSleep keeps the inhibitor until prepare returns")
    func signalsAndSleep() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus, inhibitDelayMax: 60_000_000)
        try logind.addSession("c1")
        let daemon = try TestDaemon(
            arguments: ["--lifecycle-sleep-timeout-ms", "60000", "--lifecycle-reconnect-ms", "50"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "XDG_SESSION_ID": "c1"]
        )
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }

        let active = try await firstValue(of: client.lifecycle.isActive, "lifecycle.state") { $0 }
        #expect(active)
        let reasons = Recorder<BeaconLifecycle.ResignReason>()
        let resigning = client.lifecycle.willResignActive ~> { reasons.append($0) }
        defer { resigning.dispose() }
        let prepared = Recorder<SleepPreparation>()
        let finish = ResultBox<Void>()
        let participation = client.lifecycle.holdSleep(description: "test") { preparation in
            prepared.append(preparation)
            _ = try? await finish.value(within: .seconds(30), "the test lets the participant finish")
        }
        defer { participation.dispose() }
        try await waitUntil("both streams on the daemon") {
            let streams = try await client.daemonClients().compactMap(\.stream)
            return streams.sorted() == ["io.beacon.Lifecycle.HoldSleep", "io.beacon.Notifications.Observe"]
        }
        try logind.waitForOpenInhibitors(1)

        try logind.callSession("c1", "Lock")
        #expect(try await reasons.wait("willResignActive", until: { $0.count == 1 }) == [.locked])
        #expect(try await !firstValue(of: client.lifecycle.isActive, "inactive while locked") { !$0 })
        try logind.callSession("c1", "Unlock")
        #expect(try await firstValue(of: client.lifecycle.isActive, "active again") { $0 })
        let awake = try await client.lifecycle.status()
        #expect(awake.state == .active && awake.sessionActive == true && awake.sessionLocked == false)
        #expect(awake.bridge.hasPrefix("connected") && awake.participants == 1 && awake.holdsSleepInhibitor)
        #expect(awake.preparingSleep == nil && awake.pendingParticipants == nil)

        try logind.emitManagerSignal("PrepareForSleep", true)
        let preparations = try await prepared.wait("the participant prepares", until: { $0.count == 1 })
        #expect(preparations.first?.sleep == 1)
        #expect(preparations.first?.timeout == .seconds(60))
        #expect(try await reasons.wait("willResignActive(sleep)", until: { $0.count == 2 }).last == .sleep)
        #expect(try logind.openInhibitors() == 1, "prepare has not returned yet")
        let preparing = try await client.lifecycle.status()
        #expect(preparing.preparingSleep == 1 && preparing.pendingParticipants == 1)
        finish.fulfill(.success(()))
        try logind.waitForOpenInhibitors(0)
    }
}
