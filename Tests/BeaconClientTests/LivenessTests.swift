import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Signals
import Testing

/// Observations awaited until the daemon has registered them: no polling of the daemon's client list.
@Suite("observations awaited until live")
struct LivenessTests {
    @Test("a notification observation is live when observeNextLive returns: the next post reaches it")
    func notifications() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        let names = Recorder<String>()
        let observation = try await client.notifications("app.**").map(\.name).observeNextLive { names.append($0) }
        defer { observation.dispose() }
        try await client.post("app.saved")
        #expect(try await names.wait("the post after the observation went live") { !$0.isEmpty } == ["app.saved"])
    }

    @Test("an observation the daemon refuses throws its error and observes nothing")
    func refused() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        await #expect {
            _ = try await client.notifications("a..b").observeNextLive { _ in }
        } throws: { ($0 as? BeaconError)?.code == .invalidPattern }
        #expect(client.openStreamCount == 0)
    }

    @Test("a remote property is live when observeNextLive returns: its value came first, the next change follows")
    func remoteProperty() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        try await client.set("app.title", to: "draft")
        let values = Recorder<String>()
        let observation = try await client.property("app.title", as: String.self, default: "")
            .observeNextLive { values.append($0) }
        defer { observation.dispose() }
        #expect(values.values == ["draft"])
        let writer = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { writer.close() }
        try await writer.set("app.title", to: "final")
        try await values.wait("the change after the watch went live") { $0 == ["draft", "final"] }
    }

    @Test("latestValue: nil while unwatched, known once keepLive returns, following changes until disposed")
    func keepLive() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        try await client.set("app.count", to: 3)
        let count = client.property("app.count", as: Int.self, default: 0)
        #expect(count.latestValue == nil)
        #expect(try await count.current() == 3, "read with a Get while unwatched")
        let live = try await count.keepLive()
        #expect(count.latestValue == 3)
        try await client.set("app.count", to: 4)
        try await waitUntil("latestValue follows the change") { count.latestValue == 4 }
        #expect(try await count.current() == 4)
        live.dispose()
        #expect(count.latestValue == nil)
    }

    @Test("<~> keeps a local property and a remote key equal both ways")
    func twoWayOperator() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        try await client.set("doc.title", to: "stored")
        let title = Property("")
        let remote = client.property("doc.title", as: String.self, default: "")
        let binding = title <~> remote
        defer { binding.dispose() }
        let seen = Recorder<String>()
        let observation = title.observeNext { seen.append($0) }
        defer { observation.dispose() }
        try await seen.wait("the daemon's value") { $0.last == "stored" }
        title.value = "edited"
        try await waitUntil("the edit stored") { try await client.value("doc.title", as: String.self) == "edited" }
        let writer = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { writer.close() }
        try await writer.set("doc.title", to: "from elsewhere")
        try await seen.wait("the remote change") { $0.last == "from elsewhere" }
    }
}
