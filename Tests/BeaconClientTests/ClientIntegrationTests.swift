import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Signals
import Testing

/// The client against the real `beacond`, each test on a daemon of its own.
@Suite("BeaconClient against beacond", .serialized)
struct ClientIntegrationTests {
    static let fastReconnect: BeaconClient.Options = {
        var options = BeaconClient.Options()
        options.reconnect = .init(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))
        return options
    }()

    @Test("commands: get, set, compare-and-set, unset, list, post; errors carry the varlink name")
    func commands() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }

        let version = try await client.set("user.name", to: "Ada")
        let property = try await client.get("user.name")
        #expect(property.value == "Ada" && property.version == version)
        #expect(try await client.value("user.name", as: String.self) == "Ada")
        #expect(try await client.value("user.missing", as: String.self) == nil)

        await #expect {
            try await client.set("user.name", to: "Grace", ifVersion: version + 100)
        } throws: { error in
            let error = error as? BeaconError
            return error?.code == .versionMismatch && error?.name == "io.beacon.Properties.VersionMismatch"
                && error?.parameters["actual"] == .int(version)
        }
        let second = try await client.set("user.name", to: "Grace", ifVersion: version)
        #expect(second > version)

        struct Window: Codable, Equatable {
            var width: Int
            var title: String
        }
        try await client.set("ui.window", to: Window(width: 640, title: "main"))
        #expect(try await client.value("ui.window", as: Window.self) == Window(width: 640, title: "main"))

        let listed = try await client.list(prefix: "user")
        #expect(listed.properties.map(\.key) == ["user.name"])
        #expect(listed.version >= second)

        try await client.unset("user.name")
        await #expect {
            _ = try await client.get("user.name")
        } throws: { error in
            (error as? BeaconError)?.code == .keyNotFound
                && (error as? BeaconError)?.name == "io.beacon.Properties.KeyNotFound"
        }
        await #expect {
            try await client.set("daemon.x", to: 1)
        } throws: { ($0 as? BeaconError)?.code == .readOnly }
        await #expect {
            try await client.set("not a key", to: 1)
        } throws: { ($0 as? BeaconError)?.code == .invalidKey }

        let info = try await client.call(method: "org.varlink.service.GetInfo")
        let interfaces = info["interfaces"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(interfaces.contains("io.beacon.Properties"))
        await #expect {
            _ = try await client.call(method: "io.beacon.Nothing.Here")
        } throws: { ($0 as? BeaconError)?.code == .interfaceNotFound }
    }

    @Test("a remote property bound to a local object, and a local signal bound back to the property")
    func bindingBothWays() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        let writer = try await BeaconClient.connect(to: daemon.clientAddress)
        defer {
            client.close()
            writer.close()
        }

        let name = client.property("user.name", as: String.self, default: "nobody")
        let label = Label()
        label.reactive.text <~ name
        // The current value (the default: the key does not exist) first.
        try await label.texts.wait("the default value") { $0 == ["nobody"] }

        try await writer.set("user.name", to: "Ada")
        try await label.texts.wait("the remote change") { $0.last == "Ada" }
        try await writer.set("user.name", to: "Grace")
        try await writer.unset("user.name")
        try await label.texts.wait("every change in order") { $0 == ["nobody", "Ada", "Grace", "nobody"] }

        // Writing back: every value of a local signal is stored.
        let edits = PassthroughSubject<String>()
        name <~ edits
        let seen = writer.property("user.name", as: String.self)
        let remoteValues = Recorder<String?>()
        let observation = seen.observeNext { remoteValues.append($0) }
        defer { observation.dispose() }
        try await remoteValues.wait("the watch to start") { !$0.isEmpty }
        edits.send("Hopper")
        edits.send("Lovelace")
        try await remoteValues.wait("both edits, in order") { $0.suffix(2) == ["Hopper", "Lovelace"] }
        try await label.texts.wait("the edit back on the label") { $0.last == "Lovelace" }
        #expect(try await writer.value("user.name", as: String.self) == "Lovelace")

        // A second observer of a watched property gets the latest value at once.
        let late = try await firstValue(of: name, "the latest value")
        #expect(late == "Lovelace")
    }

    @Test("two clients bound two-way to one key converge without loops; a conflict is reported, not overwritten")
    func twoWayBinding() async throws {
        let daemon = try TestDaemon()
        let first = try await BeaconClient.connect(to: daemon.clientAddress)
        let second = try await BeaconClient.connect(to: daemon.clientAddress)
        let observer = try await BeaconClient.connect(to: daemon.clientAddress)
        defer {
            first.close()
            second.close()
            observer.close()
        }
        try await first.set("doc.title", to: "start")

        // Every change of the key, as a third client sees it. The watch starts asynchronously: its initial value
        // says it runs, and no edit is made before.
        let changes = Recorder<String>()
        let watch = observer.propertyChanges(["doc.title"], initial: true).observeNext { change in
            changes.append(change.value?.stringValue ?? "<deleted>")
        }
        defer { watch.dispose() }
        try await changes.wait("the third client's watch to start") { $0 == ["start"] }

        let localA = Property("")
        let localB = Property("")
        let conflicts = Recorder<BeaconError>()
        let remoteA = first.property("doc.title", as: String.self, default: "")
        let remoteB = second.property("doc.title", as: String.self, default: "")
        let errorsA = remoteA.errors.observeNext { conflicts.append($0) }
        let errorsB = remoteB.errors.observeNext { conflicts.append($0) }
        defer {
            errorsA.dispose()
            errorsB.dispose()
        }
        remoteA.bidirectionalBind(to: localA)
        remoteB.bidirectionalBind(to: localB)
        _ = try await firstValue(of: localA, "A to take the remote value") { $0 == "start" }
        _ = try await firstValue(of: localB, "B to take the remote value") { $0 == "start" }

        localA.value = "from A"
        _ = try await firstValue(of: localB, "A's edit to reach B") { $0 == "from A" }
        localB.value = "from B"
        _ = try await firstValue(of: localA, "B's edit to reach A") { $0 == "from B" }
        localA.value = "again A"
        _ = try await firstValue(of: localB, "the third edit to reach B") { $0 == "again A" }

        // Each edit was written exactly once: nothing echoed back and forth.
        try await changes.wait("the three edits") { $0.count >= 4 }
        let sentinel = try await observer.set("doc.sentinel", to: true)
        let current = try await observer.get("doc.title")
        #expect(current.version < sentinel)
        #expect(changes.values == ["start", "from A", "from B", "again A"])
        #expect(conflicts.values.isEmpty)

        // Both edit at once, on the same version: one write wins, the other is refused and reported, and both
        // sides end with the winner. The daemon is stopped meanwhile, so that neither side can learn of the other's
        // write before its own is made: each binding takes its local change before any later delivery.
        daemon.signal(SIGSTOP)
        localA.value = "race A"
        localB.value = "race B"
        daemon.signal(SIGCONT)
        let settled = try await firstValue(
            of: localA.combineLatest(with: localB), "both sides to agree"
        ) { a, b in a == b && a.hasPrefix("race") }
        let stored = try await observer.value("doc.title", as: String.self)
        #expect(stored == settled.0)
        // Exactly one of the two edits was stored; the other one lost and was reported.
        try await changes.wait("the winning write") { $0.count >= 5 }
        let after = try await observer.set("doc.sentinel", to: false)
        #expect(try await observer.get("doc.title").version < after)
        #expect(Array(changes.values.dropFirst(4)) == [settled.0])
        try await conflicts.wait("the conflict report") { !$0.isEmpty }
        #expect(conflicts.values.allSatisfy { $0.code == .versionMismatch && $0.key == "doc.title" })
    }

    /// A client that reconnects quickly, connected to `daemon`, and the record of its connection states.
    private static func connectRecordingStates(
        to daemon: TestDaemon
    ) async throws -> (BeaconClient, Recorder<BeaconClient.ConnectionState>, any Disposable) {
        let client = try await BeaconClient.connect(to: daemon.clientAddress, options: fastReconnect)
        let states = Recorder<BeaconClient.ConnectionState>()
        let observation = client.connectionState.observeNext { states.append($0) }
        try await states.wait("connected") { $0.last == .connected }
        return (client, states, observation)
    }

    @Test("the daemon killed and restarted mid-stream: the client reconnects and misses no change")
    func restart() async throws {
        let daemon = try TestDaemon()
        let (client, states, stateObservation) = try await Self.connectRecordingStates(to: daemon)
        defer { client.close() }
        defer { stateObservation.dispose() }

        // What the client knows of the k.* keys, from one watch that lives across the restart.
        let known = KnownState()
        let watch = Task {
            for try await batch in client.watch(["k.**"], initial: true) { known.apply(batch) }
        }
        defer { watch.cancel() }
        let counter = client.property("k.counter", as: Int.self, default: 0)
        let counterValues = Recorder<Int>()
        let counterObservation = counter.observeNext { counterValues.append($0) }
        defer { counterObservation.dispose() }

        let writer = try await BeaconClient.connect(to: daemon.clientAddress)
        for index in 1...5 { try await writer.set("k.item\(index)", to: index) }
        try await writer.set("k.counter", to: 1)
        try await counterValues.wait("the first counter value") { $0.last == 1 }
        try await known.wait("the first writes") { $0["k.item5"] == 5 }
        writer.close()

        daemon.kill()
        try await states.wait("the client to notice") { $0.last == .disconnected }
        try daemon.start()

        // Changes made right after the restart, before the client's streams are back: the watch must get them
        // through `since`.
        let again = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { again.close() }
        try await again.unset("k.item1")
        try await again.set("k.item2", to: 20)
        try await again.set("k.item6", to: 6)
        try await again.set("k.counter", to: 2)
        try await again.set("k.counter", to: 3)

        try await states.wait("the client to reconnect") { $0.last == .connected }
        try await counterValues.wait("the counter after the restart") { $0.last == 3 }
        let daemonState = try await again.list(prefix: "k")
        var expected: [String: JSONValue] = [:]
        for property in daemonState.properties { expected[property.key] = property.value }
        try await known.wait("the client's view to equal the daemon's") { $0 == expected }
        #expect(known.deleted.contains("k.item1"))
        #expect(!counterValues.values.contains { $0 > 3 })
        #expect(states.values.contains(.disconnected))

        // Calls work again on the reconnected command connection.
        #expect(try await client.value("k.item6", as: Int.self) == 6)
    }

    @Test("a daemon restarted on an empty store: remote properties, two-way bindings and watches follow its versions")
    func storeReplaced() async throws {
        let daemon = try TestDaemon()
        let (client, states, stateObservation) = try await Self.connectRecordingStates(to: daemon)
        defer { client.close() }
        defer { stateObservation.dispose() }
        let known = KnownState()
        let kinds = Recorder<PropertyWatchBatch.Kind>()
        let watch = Task {
            for try await batch in client.watch(["k.**"], initial: true) {
                // The kind first: the test reads the kinds once it has seen the state a batch makes.
                kinds.append(batch.kind)
                known.apply(batch)
            }
        }
        defer { watch.cancel() }
        let counter = client.property("k.counter", as: Int.self, default: 0)
        let values = Recorder<Int>()
        let observation = counter.observeNext { values.append($0) }
        defer { observation.dispose() }
        let errors = Recorder<BeaconError>()
        let errorObservation = counter.errors.observeNext { errors.append($0) }
        defer { errorObservation.dispose() }
        // A two-way binding follows the same key.
        let local = Property(0)
        let binding = counter.bidirectionalBind(to: local)
        defer { binding.dispose() }

        // Versions well above what the new store will reach.
        for value in 1...20 { try await client.set("k.counter", to: value) }
        try await client.set("k.gone", to: 1)
        try await values.wait("the last counter value") { $0.last == 20 }
        _ = try await firstValue(of: local, "the bound value") { $0 == 20 }
        try await known.wait("the first store's keys") { $0["k.gone"] == 1 && $0["k.counter"] == 20 }

        daemon.kill()
        try await states.wait("the client to notice") { $0.last == .disconnected }
        try FileManager.default.removeItem(atPath: daemon.directory + "/state")
        try daemon.start()
        let again = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { again.close() }
        try await again.set("k.counter", to: 7)
        try await states.wait("the client to reconnect") { $0.last == .connected }
        try await values.wait("the new store's value") { $0.last == 7 }
        try await known.wait("the watch's view of the new store") { $0 == ["k.counter": 7] }
        #expect(known.deleted.contains("k.gone"))
        #expect(kinds.values.contains(.resync))
        _ = try await firstValue(of: local, "the bound value from the new store") { $0 == 7 }
        // Later changes, at versions the first store had passed long ago, still arrive.
        try await again.set("k.counter", to: 8)
        try await values.wait("a later value") { $0.last == 8 }
        _ = try await firstValue(of: local, "a later bound value") { $0 == 8 }
        // A local edit is written against the new store's version, without a conflict.
        local.value = 9
        try await values.wait("the local edit, written") { $0.last == 9 }
        #expect(try await again.value("k.counter", as: Int.self) == 9)

        // Another restart on the same store: the watch resumes from the new store's versions (a replay), it does
        // not take that store for replaced again.
        let resyncs = kinds.values.filter { $0 == .resync }.count
        daemon.kill()
        try await states.wait("the client to notice again") { $0.last == .disconnected }
        try daemon.start()
        let third = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { third.close() }
        try await third.set("k.counter", to: 10)
        try await values.wait("the value after the second restart") { $0.last == 10 }
        try await known.wait("the watch after the second restart") { $0["k.counter"] == 10 }
        #expect(kinds.values.filter { $0 == .resync }.count == resyncs)
        #expect(kinds.values.last == .replay || kinds.values.last == .changes)
        #expect(errors.values.isEmpty)
    }

    @Test("a value that does not decode is reported, not swallowed; a good value afterwards is delivered")
    func decodingErrors() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        try await client.set("cfg.size", to: "large")

        let size = client.property("cfg.size", as: Int.self, default: 0)
        let errors = Recorder<BeaconError>()
        let errorObservation = size.errors.observeNext { errors.append($0) }
        defer { errorObservation.dispose() }
        let values = Recorder<Int>()
        let observation = size.observeNext { values.append($0) }
        defer { observation.dispose() }

        let reported = try await errors.wait("the decoding error") { !$0.isEmpty }
        #expect(reported[0].code == .decodingFailed)
        #expect(reported[0].key == "cfg.size")
        #expect(reported[0].cause is DecodingError)
        #expect(values.values.isEmpty)

        try await client.set("cfg.size", to: 12)
        try await values.wait("the good value") { $0 == [12] }

        // The AsyncSequence form throws the decoding error.
        try await client.set("cfg.other", to: ["not": "a number"])
        let other = client.property("cfg.other", as: Int.self)
        await #expect {
            try await withDeadline("the decoding error of the sequence") {
                for try await _ in other.updates {}
            }
        } throws: { ($0 as? BeaconError)?.code == .decodingFailed }

        // Get-style reads throw it too.
        await #expect {
            _ = try await client.value("cfg.other", as: Int.self)
        } throws: { ($0 as? BeaconError)?.code == .decodingFailed }
    }

    @Test("an optional property gets nil while the key does not exist, then its value, then nil once it is unset")
    func optionalProperty() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        defer { client.close() }
        let title = client.property("opt.title", as: String.self)
        let values = Recorder<String?>()
        let observation = title.observeNext { values.append($0) }
        defer { observation.dispose() }
        try await values.wait("nil for the missing key") { $0 == [nil] }
        #expect(title.latestValue == .some(nil))
        try await client.set("opt.title", to: "draft")
        try await values.wait("the value") { $0 == [nil, "draft"] }
        #expect(title.latestValue == .some("draft"))
        try await client.unset("opt.title")
        try await values.wait("nil again") { $0 == [nil, "draft", nil] }
        #expect(title.latestValue == .some(nil))
    }

    @Test("disposing a subscription ends its stream on the daemon's side")
    func disposeClosesStream() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        let inspector = try await BeaconClient.connect(to: daemon.clientAddress)
        defer {
            client.close()
            inspector.close()
        }
        func streams() async throws -> [String] {
            try await inspector.daemonClients().compactMap { client in
                guard let stream = client.stream else { return nil }
                return stream + " " + client.patterns.joined(separator: ",")
            }
        }

        let notes = client.notifications("app.**").observeNext { _ in }
        let property = client.property("app.title", as: String.self)
        let values = Recorder<String?>()
        let propertyObservation = property.observeNext { values.append($0) }
        try await waitUntil("both streams on the daemon") {
            let current = try await streams()
            return current.contains("io.beacon.Notifications.Observe app.**")
                && current.contains("io.beacon.Properties.Watch app.title")
        }
        #expect(try await inspector.daemonStatus().subscriptions == 2)

        notes.dispose()
        try await waitUntil("the Observe stream to end") {
            try await !streams().contains("io.beacon.Notifications.Observe app.**")
        }
        propertyObservation.dispose()
        try await waitUntil("the Watch stream to end") { try await streams().isEmpty }
        #expect(try await inspector.daemonStatus().subscriptions == 0)
        // Cancelling closes a stream's connection at once; the client forgets it when the stream's task ends.
        try await waitUntil("the client to forget its stream connections") { client.openStreamCount == 0 }

        // Lifecycle conveniences are notifications of the daemon's lifecycle names.
        let activations = Recorder<Int>()
        let lifecycle = client.lifecycle.didBecomeActive ~> { activations.append(1) }
        try await waitUntil("the lifecycle observation on the daemon") {
            try await streams() == ["io.beacon.Notifications.Observe lifecycle.didBecomeActive"]
        }
        lifecycle.dispose()
        try await waitUntil("the lifecycle observation to end") { try await streams().isEmpty }
        #expect(activations.values.isEmpty)
    }

    @Test("notifications as a signal and a sequence; posting with ~> poster in order")
    func notifications() async throws {
        let daemon = try TestDaemon()
        let client = try await BeaconClient.connect(to: daemon.clientAddress)
        let other = try await BeaconClient.connect(to: daemon.clientAddress)
        defer {
            client.close()
            other.close()
        }
        let received = try await other.observeNotifications(["app.*"])
        let taps = PassthroughSubject<Void>()
        taps ~> client.poster("app.refresh")
        struct Saved: Codable, Equatable, Sendable { var document: String }
        let saves = PassthroughSubject<Saved>()
        saves ~> client.poster("app.saved", userInfo: Saved.self)

        taps.send()
        saves.send(Saved(document: "a.txt"))
        taps.send()
        try await client.post("other.ignored")
        try await client.post("app.last", userInfo: ["n": 3])
        // Direct posts do not wait for the posters' queue: the order between the two is not defined.

        let (names, saved) = try await withDeadline("the four notifications") {
            var names: [String] = []
            var saved: Saved?
            for try await note in received {
                names.append(note.name)
                if note.name == "app.saved" { saved = try note.userInfo(as: Saved.self) }
                if names.count == 4 { break }
            }
            return (names, saved)
        }
        #expect(names.filter { $0 != "app.last" } == ["app.refresh", "app.saved", "app.refresh"])
        #expect(names.contains("app.last"))
        #expect(saved == Saved(document: "a.txt"))

        await #expect {
            _ = try await client.observeNotifications(["bad pattern!"])
        } throws: { ($0 as? BeaconError)?.code == .invalidPattern }
        await #expect {
            try await client.post("lifecycle.didBecomeActive")
        } throws: { ($0 as? BeaconError)?.code == .invalidName }
    }
}

/// The state of a set of keys as rebuilt from watch batches.
final class KnownState: Sendable {
    private let values = Recorder<[String: JSONValue]>()
    private let deletions = Recorder<String>()

    func apply(_ batch: PropertyWatchBatch) {
        var current = values.values.last ?? [:]
        for change in batch.changes {
            if let value = change.value {
                current[change.key] = value
            } else {
                current[change.key] = nil
                deletions.append(change.key)
            }
        }
        values.append(current)
    }

    var deleted: [String] { deletions.values }

    func wait(_ what: String, until predicate: @escaping ([String: JSONValue]) -> Bool) async throws {
        try await values.wait(what) { states in states.last.map(predicate) ?? false }
    }
}
