import BeaconClient
import BeaconTestSupport
import Observation
import Signals
import Synchronization
import Testing

/// A settings mirror as an app would write it: an `@Observable` model driven by remote properties.
@Observable
final class EditorModel: @unchecked Sendable {
    var title = ""
    var fontSize = 12
}

@Suite("remote properties driving an @Observable model")
struct ObservationClientTests {
    @Test("withObservationTracking and Observations see the changes a remote property sets on the model")
    func observableModel() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        try await client.set("editor.title", to: "draft")
        let model = EditorModel()
        let title = client.property("editor.title", as: String.self, default: "")
        // The binding is live once the model has the daemon's value.
        let binding = try await title.observeNextLive { model.title = $0 }
        defer { binding.dispose() }
        #expect(model.title == "draft")

        let changed = ResultBox<Void>()
        withObservationTracking {
            _ = model.title
        } onChange: {
            changed.fulfill(.success(()))
        }
        let writer = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { writer.close() }
        try await writer.set("editor.title", to: "final")
        try await changed.value(within: .seconds(15), "withObservationTracking's onChange")

        _ = try await withDeadline("Observations to see the remote change") {
            let titles = Observations { model.title }
            var iterator = titles.makeAsyncIterator()
            var seen = await iterator.next()
            try await writer.set("editor.title", to: "published")
            while seen != "published" { seen = await iterator.next() }
            return true
        }
    }
}
