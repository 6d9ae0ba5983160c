import BeaconClient
import BeaconFoundation
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Observation
import Synchronization
import Testing

/// `BeaconUserDefaults` against the real daemon, beside Foundation's own `UserDefaults`.
@Suite("BeaconUserDefaults", .serialized)
struct BeaconUserDefaultsTests {
    static let suite = "com.example.editor"

    @Test("typed getters convert as Foundation's UserDefaults does, for the same stored values")
    func typedGetters() throws {
        let daemon = try TestDaemon()
        let defaults = try #require(BeaconUserDefaults(suiteName: Self.suite, address: daemon.clientAddress))
        // Foundation's own, in memory (a volatile domain): the reference for every conversion.
        let reference = try #require(UserDefaults(suiteName: "beacon.reference.\(getpid())"))
        let values: [String: Any] = [
            "text": "12", "fraction": 12.7, "flag": true, "number": 42, "negative": -3, "word": "yes",
            "list": ["a", "b"], "mixed": [1, "b"], "table": ["k": 1], "bytes": Data([1, 2, 3]),
        ]
        for (key, value) in values {
            defaults.set(value, forKey: key)
            reference.set(value, forKey: key)
        }
        for key in values.keys.sorted() + ["missing"] {
            #expect(defaults.integer(forKey: key) == reference.integer(forKey: key), "integer \(key)")
            #expect(defaults.double(forKey: key) == reference.double(forKey: key), "double \(key)")
            #expect(defaults.bool(forKey: key) == reference.bool(forKey: key), "bool \(key)")
            #expect(defaults.string(forKey: key) == reference.string(forKey: key), "string \(key)")
            #expect(defaults.stringArray(forKey: key) == reference.stringArray(forKey: key), "stringArray \(key)")
            #expect(defaults.data(forKey: key) == reference.data(forKey: key), "data \(key)")
            #expect((defaults.array(forKey: key) == nil) == (reference.array(forKey: key) == nil), "array \(key)")
            #expect(
                (defaults.dictionary(forKey: key) == nil) == (reference.dictionary(forKey: key) == nil),
                "dictionary \(key)")
        }
        for key in values.keys { reference.removeObject(forKey: key) }

        // A URL comes back as the URL it was.
        let url = try #require(URL(string: "https://example.org/a?b=1"))
        defaults.set(url, forKey: "site")
        #expect(defaults.url(forKey: "site") == url)

        // Stored in the daemon: another object of the suite (another process would do the same) reads them.
        let other = try #require(BeaconUserDefaults(suiteName: Self.suite, address: daemon.clientAddress))
        #expect(other.integer(forKey: "number") == 42)
        #expect(other.data(forKey: "bytes") == Data([1, 2, 3]))
        #expect(other.dictionaryRepresentation()["word"] as? String == "yes")
    }

    @Test("register, override, remove; another process's change updates the values and posts didChangeNotification")
    func registerAndChanges() async throws {
        let daemon = try TestDaemon()
        let defaults = try #require(BeaconUserDefaults(suiteName: Self.suite, address: daemon.clientAddress))
        defaults.register(defaults: ["fontSize": 12, "theme": "light"])
        #expect(defaults.integer(forKey: "fontSize") == 12)
        // The registration is the daemon's: beaconctl describe shows the default.
        let described = try runBeaconctl(["describe", "com.example.editor.fontSize", "--json"], daemon)
        #expect(described.contains("\"defaultValue\":12"), "\(described)")
        defaults.set(14, forKey: "fontSize")
        #expect(defaults.integer(forKey: "fontSize") == 14)
        defaults.removeObject(forKey: "fontSize")
        #expect(defaults.integer(forKey: "fontSize") == 12)
        // The Watch brings this object's own writes back later; an older one does not undo a newer write.
        var undone = 0
        for round in 0..<100 {
            defaults.set(100 + round, forKey: "fontSize")
            defaults.removeObject(forKey: "fontSize")
            if defaults.integer(forKey: "fontSize") != 12 { undone += 1 }
        }
        #expect(undone == 0)

        let changes = Mutex(0)
        let token = NotificationCenter.default.addObserver(
            forName: UserDefaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in changes.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(token) }
        // Another process sets a key of the suite.
        _ = try runBeaconctl(["set", "com.example.editor.theme", "dark"], daemon)
        let deadline = ContinuousClock.now + .seconds(15)
        // The value is taken in first, then the notification posted: both are waited for.
        while (defaults.string(forKey: "theme") != "dark" || changes.withLock({ $0 }) == 0)
            && ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(defaults.string(forKey: "theme") == "dark")
        #expect(changes.withLock { $0 } >= 1)
    }

    /// A model as an app writes one, its setting a ``BeaconDefault``.
    @Observable final class EditorModel {
        @ObservationIgnored @BeaconDefault<Int> var fontSize: Int

        init(store: BeaconUserDefaults) {
            _fontSize = BeaconDefault(wrappedValue: 12, "fontSize", store: store)
        }
    }

    @Test("@BeaconDefault reads, writes through, and drives an @Observable model when another process changes it")
    func propertyWrapper() async throws {
        let daemon = try TestDaemon()
        let store = try #require(BeaconUserDefaults(suiteName: Self.suite, address: daemon.clientAddress))
        let model = EditorModel(store: store)
        #expect(model.fontSize == 12, "the wrapped default while the key holds nothing")
        model.fontSize = 14
        #expect(model.fontSize == 14)
        #expect(try runBeaconctl(["get", "com.example.editor.fontSize"], daemon) == "14\n")

        let changed = Mutex(false)
        withObservationTracking {
            _ = model.fontSize
        } onChange: {
            changed.withLock { $0 = true }
        }
        _ = try runBeaconctl(["set", "com.example.editor.fontSize", "18"], daemon)
        let deadline = ContinuousClock.now + .seconds(15)
        while !changed.withLock({ $0 }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(changed.withLock { $0 }, "Observation saw the other process's change")
        #expect(model.fontSize == 18)
    }

    @Test("a key a lockdown file locks is forced: objectIsForced, and set changes nothing")
    func lockedKeys() throws {
        let setup = try SettingsSetup(lockdownFiles: ["10-site": "com.example.editor.fontSize = 20\n"])
        let defaults = try #require(
            BeaconUserDefaults(suiteName: Self.suite, address: setup.daemon.clientAddress))
        #expect(defaults.objectIsForced(forKey: "fontSize"))
        #expect(!defaults.objectIsForced(forKey: "theme"))
        #expect(defaults.integer(forKey: "fontSize") == 20)
        defaults.set(30, forKey: "fontSize")
        #expect(defaults.integer(forKey: "fontSize") == 20)
    }

    @Test("a suite name that is not a Beacon key, or no daemon, gives nil")
    func refused() throws {
        #expect(BeaconUserDefaults(suiteName: "not a key", address: BeaconAddress(socketPath: "/nonexistent/s")) == nil)
        #expect(
            BeaconUserDefaults(suiteName: "com.example.x", address: BeaconAddress(socketPath: "/nonexistent/s")) == nil)
    }

    func runBeaconctl(_ arguments: [String], _ daemon: TestDaemon) throws -> String {
        let process = try ChildProcess(
            try BuiltProducts.beaconctl(), [arguments[0], "--address", daemon.address] + arguments.dropFirst(),
            output: .capture)
        let output = String(decoding: process.readOutput(), as: UTF8.self)
        #expect(process.wait() == 0, "beaconctl \(arguments)")
        return output
    }
}
