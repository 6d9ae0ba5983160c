import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Signals
import Testing

@Suite("BeaconClient suspension against beacond", .serialized)
struct SuspensionClientTests {
    /// The daemon's streams of the test's clients.
    static func streams(_ client: BeaconClient) async throws -> [DaemonClient] {
        try await client.daemonClients().filter { $0.stream != nil }
    }

    @Test("suspend() and resume(): one object's notifications coalesced, delivered in order on resume")
    func suspendAndResume() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        let received = Recorder<BeaconNotification>()
        let observation = try await client.notifications(matching: ["x.**"], object: "door", whileSuspended: .coalesce)
            .observeNextLive { received.append($0) }
        defer { observation.dispose() }

        client.suspend()
        client.suspend()
        client.resume()
        #expect(client.isSuspended)
        try await waitUntil("the daemon suspends the stream") {
            try await Self.streams(client).first?.isSuspended == true
        }
        for (name, object) in [("x.a", "door"), ("x.b", "window"), ("x.a", "door"), ("x.b", "door")] {
            _ = try await client.call(
                method: "io.beacon.Notifications.Post", parameters: ["name": .string(name), "object": .string(object)])
        }
        #expect(try await Self.streams(client).first?.held == 2)
        #expect(received.values.isEmpty)
        client.resume()
        let values = try await received.wait("the coalesced notifications") { $0.count >= 2 }
        #expect(values.map(\.name) == ["x.a", "x.b"])
        #expect(values.allSatisfy { $0.object == "door" })
        #expect(values.map(\.sequence) == values.map(\.sequence).sorted())
    }

    @Test("following the session: notifications are held while locked, the lifecycle signals are not")
    func followsTheSession() async throws {
        let bus = try PrivateBus()
        defer { bus.shutdown() }
        try bus.start()
        let logind = try LogindMock.start(on: bus)
        try logind.addSession("c1")
        let daemon = try TestDaemon(
            arguments: ["--lifecycle-reconnect-ms", "50"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "XDG_SESSION_ID": "c1"])
        var options = BeaconClient.Options()
        options.suspendsWhileSessionInactive = true
        let client = try await BeaconClient.connect(to: daemon.clientAddress, options: options)
        defer { client.close() }
        #expect(try await firstValue(of: client.lifecycle.isActive, "lifecycle.state") { $0 })
        let received = Recorder<String>()
        let reasons = Recorder<BeaconLifecycle.ResignReason>()
        let notes = client.notifications("app.**").observeNext { received.append($0.name) }
        defer { notes.dispose() }
        let resigning = client.lifecycle.willResignActive ~> { reasons.append($0) }
        defer { resigning.dispose() }
        try await waitUntil("both observations on the daemon") { try await Self.streams(client).count == 2 }

        try logind.callSession("c1", "Lock")
        // Never suspended: the lifecycle tells of the lock while the rest waits.
        try await reasons.wait("willResignActive") { $0 == [.locked] }
        // The bridge may post the notification before it publishes the state that suspends the other stream.
        try await waitUntil("the session suspends the notification stream") {
            try await Self.streams(client).contains { $0.isSuspended }
        }
        _ = try await client.call(method: "io.beacon.Notifications.Post", parameters: ["name": "app.during"])
        #expect(try await Self.streams(client).contains { $0.held == 1 && $0.isSuspended })
        #expect(received.values.isEmpty)
        try logind.callSession("c1", "Unlock")
        try await received.wait("the held notification after unlocking") { $0 == ["app.during"] }
    }

    @Test("a remote property keeps working across suspension: the latest value arrives on resume")
    func remotePropertyAcrossSuspension() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        let writer = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { writer.close() }
        try await writer.set("app.mode", to: "light")
        let mode = client.property("app.mode", as: String.self, default: "")
        let values = Recorder<String>()
        let binding = mode.observeNext { values.append($0) }
        defer { binding.dispose() }
        try await values.wait("the first value") { $0 == ["light"] }
        client.suspend()
        try await waitUntil("the daemon suspends the watch") {
            try await Self.streams(client).first?.isSuspended == true
        }
        try await writer.set("app.mode", to: "dark")
        try await writer.set("app.mode", to: "sepia")
        #expect(try await Self.streams(client).first?.held == 1)
        #expect(values.values == ["light"])
        client.resume()
        try await values.wait("the latest value after resuming") { $0 == ["light", "sepia"] }
    }
}
