import BeaconClient
import BeaconFoundation
import BeaconTestSupport
import Foundation
import Synchronization
import Testing

/// `DistributedNotificationCenter` on Linux: two centers on two connections to the real daemon.
@Suite("DistributedNotificationCenter", .serialized)
struct DistributedNotificationCenterTests {
    /// Notifications an observer received, waited for with a bound. (A Notification is not Sendable: the list is
    /// behind a lock of its own.)
    final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var notes: [Notification] = []
        func add(_ note: Notification) { lock.withLock { notes.append(note) } }
        var all: [Notification] { lock.withLock { notes } }

        func wait(for count: Int, within limit: Duration = .seconds(15)) async throws -> [Notification] {
            let deadline = ContinuousClock.now + limit
            while all.count < count {
                guard ContinuousClock.now < deadline else {
                    throw TestFailure("got \(all.count) of \(count) notifications")
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            return all
        }
    }

    static func centers(_ daemon: TestDaemon) async throws -> (
        DistributedNotificationCenter, DistributedNotificationCenter
    ) {
        let poster = DistributedNotificationCenter(client: try await BeaconClient.connect(to: daemon.clientAddress))
        let observer = DistributedNotificationCenter(client: try await BeaconClient.connect(to: daemon.clientAddress))
        return (poster, observer)
    }

    /// Adds an observer and waits until its stream is in place (a probe post comes through).
    static func observe(
        _ center: DistributedNotificationCenter, _ poster: DistributedNotificationCenter, name: String,
        object: String? = nil, behavior: DistributedNotificationCenter.SuspensionBehavior = .coalesce
    ) async throws -> (Received, any NSObjectProtocol) {
        let received = Received()
        let probe = Received()
        let probeToken = center.addObserver(forName: .init("probe.ready"), object: nil, queue: nil) { probe.add($0) }
        let token = center.addObserver(
            forName: .init(name), object: object, suspensionBehavior: behavior, queue: nil
        ) { received.add($0) }
        let deadline = ContinuousClock.now + .seconds(15)
        while probe.all.isEmpty && ContinuousClock.now < deadline {
            poster.post(name: .init("probe.ready"), object: nil)
            try await Task.sleep(for: .milliseconds(100))
        }
        center.removeObserver(probeToken)
        guard !probe.all.isEmpty else { throw TestFailure("the observer's stream did not start") }
        // The probe also shows the other observer's stream is up: both were added before it.
        return (received, token)
    }

    @Test("a post reaches the other process's observer with its object and a userInfo of every property-list type")
    func postAndObserve() async throws {
        let daemon = try TestDaemon()
        let (poster, observer) = try await Self.centers(daemon)
        let (received, token) = try await Self.observe(observer, poster, name: "com.example.sync.done")
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let data = Data([0, 1, 2, 255])
        let userInfo: [AnyHashable: Any] = [
            "text": "Zürich", "int": 42, "negative": -7, "double": 2.5, "flag": true, "date": date, "data": data,
            "list": [1, "two", false], "nested": ["$weird": "kept", "inner": [3.25]],
        ]
        poster.post(name: .init("com.example.sync.done"), object: "inbox", userInfo: userInfo)
        let note = try #require(try await received.wait(for: 1).first)
        #expect(note.name.rawValue == "com.example.sync.done")
        #expect(note.object as? String == "inbox")
        let info = try #require(note.userInfo)
        #expect(info["text"] as? String == "Zürich")
        #expect(info["int"] as? Int == 42)
        #expect(info["negative"] as? Int == -7)
        #expect(info["double"] as? Double == 2.5)
        #expect(info["flag"] as? Bool == true)
        #expect(info["date"] as? Date == date)
        #expect(info["data"] as? Data == data)
        let list = try #require(info["list"] as? [Any])
        #expect(list.count == 3 && list[0] as? Int == 1 && list[1] as? String == "two" && list[2] as? Bool == false)
        let nested = try #require(info["nested"] as? [String: Any])
        #expect(nested["$weird"] as? String == "kept")
        #expect(nested["inner"] as? [Double] == [3.25])

        // object filtering; removeObserver ends delivery.
        let (doors, doorToken) = try await Self.observe(observer, poster, name: "com.example.door", object: "front")
        poster.post(name: .init("com.example.door"), object: "back")
        poster.post(name: .init("com.example.door"), object: "front")
        #expect(try await doors.wait(for: 1).map { $0.object as? String } == ["front"])
        observer.removeObserver(token)
        observer.removeObserver(doorToken)

        // notifications(named:) as an AsyncSequence: its stream starts when iterated, so posts are repeated until
        // one arrives (bounded).
        let seen = Mutex<String?>(nil)
        let stream = observer.notifications(named: .init("com.example.async"))
        let reader = Task {
            for await note in stream {
                seen.withLock { $0 = note.object as? String }
                return
            }
        }
        let deadline = ContinuousClock.now + .seconds(15)
        while seen.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
            poster.post(name: .init("com.example.async"), object: "seen")
            try await Task.sleep(for: .milliseconds(100))
        }
        reader.cancel()
        #expect(seen.withLock { $0 } == "seen")
    }

    @Test("across processes: beaconctl's posts reach an observer here, this center's posts reach beaconctl monitor")
    func otherProcesses() async throws {
        let daemon = try TestDaemon()
        let (poster, observer) = try await Self.centers(daemon)
        let (received, _) = try await Self.observe(observer, poster, name: "com.example.remote")
        // Another process posts, with a date and data as the center sends them.
        let post = try ChildProcess(
            try BuiltProducts.beaconctl(),
            [
                "post", "--address", daemon.address, "--object", "cli", "com.example.remote",
                #"{"at": {"$date": 1700000000.5}, "blob": {"$data": "AAEC"}, "n": 3}"#,
            ])
        #expect(post.wait() == 0)
        let note = try #require(try await received.wait(for: 1).first)
        #expect(note.object as? String == "cli")
        #expect(note.userInfo?["at"] as? Date == Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(note.userInfo?["blob"] as? Data == Data([0, 1, 2]))
        #expect(note.userInfo?["n"] as? Int == 3)

        // This center posts; another process observes.
        let monitor = try ChildProcess(
            try BuiltProducts.beaconctl(),
            ["monitor", "--address", daemon.address, "--json", "--limit", "1", "com.example.fromhere"],
            output: .capture)
        let deadline = ContinuousClock.now + .seconds(15)
        var printed = ""
        while printed.isEmpty && ContinuousClock.now < deadline {
            poster.post(
                name: .init("com.example.fromhere"), object: "swift", userInfo: ["when": Date(timeIntervalSince1970: 5)]
            )
            printed = String(
                decoding: monitor.readOutput(until: { $0.contains(UInt8(ascii: "\n")) }, within: .milliseconds(200)),
                as: UTF8.self)
        }
        #expect(printed.contains(#""object":"swift""#), "\(printed)")
        #expect(printed.contains(#""when":{"$date":5"#), "\(printed)")
        _ = monitor.wait(within: .seconds(10))
    }

    @Test("suspended: hold keeps all, drop none, coalesce the latest of each; deliverImmediately comes at once")
    func suspension() async throws {
        let daemon = try TestDaemon()
        let (poster, observer) = try await Self.centers(daemon)
        let (held, _) = try await Self.observe(observer, poster, name: "com.example.held", behavior: .hold)
        let (dropped, _) = try await Self.observe(observer, poster, name: "com.example.dropped", behavior: .drop)
        let (coalesced, _) = try await Self.observe(
            observer, poster, name: "com.example.coalesced", behavior: .coalesce)
        let (immediate, _) = try await Self.observe(
            observer, poster, name: "com.example.immediate", behavior: .deliverImmediately)
        observer.suspended = true
        #expect(observer.suspended)
        try await waitUntil("the suspension") {
            try await observer.client.daemonClients().contains { $0.isSuspended }
        }
        for index in 0..<3 {
            poster.post(name: .init("com.example.held"), object: "\(index)")
            poster.post(name: .init("com.example.dropped"), object: "\(index)")
            poster.post(name: .init("com.example.coalesced"), object: "same", userInfo: ["n": index])
            poster.post(name: .init("com.example.immediate"), object: "\(index)")
        }
        poster.post(name: .init("com.example.coalesced"), object: "other")
        // An observer that is never suspended gets them while the center is suspended.
        #expect(try await immediate.wait(for: 3).map { $0.object as? String } == ["0", "1", "2"])
        poster.postNotificationName(
            .init("com.example.held"), object: "urgent", userInfo: nil, deliverImmediately: true)
        // The urgent one comes at once, after what was held before it.
        #expect(try await held.wait(for: 4).map { $0.object as? String } == ["0", "1", "2", "urgent"])
        poster.post(name: .init("com.example.held"), object: "later")
        observer.suspended = false
        #expect(try await held.wait(for: 5).last?.object as? String == "later")
        poster.post(name: .init("com.example.dropped"), object: "after")
        #expect(try await dropped.wait(for: 1).map { $0.object as? String } == ["after"])
        // Coalesced: the latest of each name and object, then what was posted after the resume.
        poster.post(name: .init("com.example.coalesced"), object: "after")
        let kept = try await coalesced.wait(for: 3)
        #expect(kept.count == 3 && kept.last?.object as? String == "after")
        let latest = kept.dropLast().map { "\($0.object as? String ?? "?") \($0.userInfo?["n"] as? Int ?? -1)" }
        #expect(Set(latest) == ["same 2", "other -1"], "\(latest)")
    }
}
