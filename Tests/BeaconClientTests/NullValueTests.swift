import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Testing

/// JSON `null` is a value like any other: stored, read back and listed.
@Suite("A property holding null")
struct NullValueTests {
    @Test("Set to null, then Get and List show null, Describe counts it as set, and a generated Set sends null too")
    func nullValue() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        let version = try await client.set("app.nothing", to: .null)
        #expect(try await client.get("app.nothing").value == .null)
        let listed = try await client.list(prefix: "app")
        #expect(listed.properties.map(\.key) == ["app.nothing"])
        #expect(listed.properties.first?.value == .null && listed.properties.first?.version == version)
        let described = try await client.describe("app.nothing")
        #expect(described.isSet && described.version == version)
        // The generated call keeps a null value: Set's value is required, and null is one.
        let generated = try await IOBeaconProperties.Client(client).set(key: "app.other", value: .null)
        #expect(try await client.get("app.other").version == Int64(generated.version))
        #expect(try await client.get("app.other").value == .null)
    }
}
