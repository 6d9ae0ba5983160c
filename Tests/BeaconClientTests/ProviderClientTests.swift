import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Synchronization
import Testing

@Suite("BeaconClient as a provider")
struct ProviderClientTests {
    @Test("provide, answer and publish: a second client's Sets go through the provider, which keeps its own versions")
    func provideAnswerPublish() async throws {
        let daemon = try TestDaemon()
        let provider = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { provider.close() }
        let caller = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { caller.close() }

        // The provider's store: the value and version of each key, as etcd would keep them.
        let store = Mutex<(revision: Int64, values: [String: (JSONValue, Int64)])>((100, [:]))
        let (registrations, registered) = AsyncStream<Int64>.makeStream()
        let serving = provider.provide(["fleet.**"]) { number in
            let changes = store.withLock { state in
                state.values.map { ProvidedChange(key: $0.key, value: $0.value.0, providerVersion: $0.value.1) }
            }
            _ = try? await provider.publish(provider: number, changes: changes, resync: true)
            registered.yield(number)
        } handle: { _, request in
            store.withLock { state in
                let current = state.values[request.key]?.1 ?? 0
                if let expected = request.ifProviderVersion, expected != current {
                    return .error("io.beacon.Properties.VersionMismatch", ["key": .string(request.key)])
                }
                if request.key == "fleet.kept" {
                    return .error("io.beacon.Properties.ReadOnly", ["key": .string(request.key), "why": "kept"])
                }
                state.revision += 1
                let machine: [String: JSONValue] = ["uid": 0, "pid": 1, "machine": "elsewhere"]
                if request.method == .unset {
                    state.values[request.key] = nil
                    return .change(ProvidedChange(key: request.key, value: nil, providerVersion: state.revision))
                }
                state.values[request.key] = (request.value ?? .null, state.revision)
                return .change(
                    ProvidedChange(
                        key: request.key, value: request.value, providerVersion: state.revision, origin: machine))
            }
        }
        defer { serving.dispose() }
        let number = try await withDeadline("the provider's registration") {
            var iterator = registrations.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(number != nil)

        let version = try await caller.set("fleet.sign.message", to: "Closed today")
        let property = try await caller.get("fleet.sign.message")
        #expect(property.value == "Closed today" && property.version == version)
        #expect(store.withLock { $0.values["fleet.sign.message"]?.1 } == 101)

        // Compare-and-set with the daemon's version: the provider sees its own version of the value.
        let second = try await caller.set("fleet.sign.message", to: "Open", ifVersion: version)
        #expect(second > version)
        // The provider refuses a stale compare-and-set it is asked to decide.
        store.withLock { $0.values["fleet.sign.message"]?.1 = 500 }
        await #expect {
            try await caller.set("fleet.sign.message", to: "Late", ifVersion: second)
        } throws: { error in
            (error as? BeaconError)?.name == "io.beacon.Properties.VersionMismatch"
        }
        // An Unset the provider refuses: its error comes with every parameter the provider gave it, those its
        // interface does not declare too.
        await #expect {
            try await caller.unset("fleet.kept")
        } throws: { error in
            (error as? BeaconError)?.code == .readOnly && (error as? BeaconError)?.parameters["why"] == "kept"
        }
        try await caller.unset("fleet.sign.message")
        await #expect {
            try await caller.get("fleet.sign.message")
        } throws: { error in
            (error as? BeaconError)?.code == .keyNotFound
        }
        // The provider goes away: the subtree's writes fail with a named error once they waited for another.
        serving.dispose()
        provider.close()
        try await withDeadline("writes of the subtree failing once the provider is gone") {
            while true {
                do {
                    _ = try await caller.set("fleet.sign.message", to: "Nobody")
                } catch let error as BeaconError where error.code == .providerUnavailable {
                    return
                } catch let error as BeaconError where error.code == .outcomeUnknown {
                    // A write the provider was sent as it went: its outcome is unknown, and the next one is refused.
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }
}
