import BeaconProtocol
import NIOCore
import Testing

@testable import BeaconDaemon

@Suite("The bus in process: ticks, commits and fan-out on an embedded event loop")
struct BusInProcessTests {
    @Test("a commit that fails publishes nothing, undoes the tick and answers every call of that tick with an error")
    func failedCommit() throws {
        let bus = try InProcessBus()
        let watcher = try bus.connect()
        let observer = try bus.connect()
        let first = try bus.connect()
        let second = try bus.connect()
        try watcher.send(Call.watch(["**"]))
        try observer.send(Call.observe(["**"]))
        try first.send(Call.set("kept", 1))
        bus.endTick()
        _ = try watcher.messages()
        _ = try observer.messages()
        #expect(try first.messages().first?.parameters?["version"] == 1)

        bus.storage.failures = 1
        try first.send([Call.set("lost", 2), Call.get("lost"), Call.set("kept", 3)])
        try second.send([Call.post("note", "x"), Call.set("other", 4)])
        let late = try bus.connect()
        try late.send(Call.watch(["**"]))
        bus.endTick()

        #expect(try first.messages().map(\.errorName) == Array(repeating: "io.beacon.StoreFailed", count: 3))
        #expect(try second.messages().map(\.errorName) == Array(repeating: "io.beacon.StoreFailed", count: 2))
        let lateReplies = try late.messages()
        #expect(lateReplies.map(\.errorName) == ["io.beacon.StoreFailed"], "\(lateReplies)")
        #expect(try watcher.messages().isEmpty)
        #expect(try observer.messages().isEmpty)
        #expect(bus.bus.fanOut.subscriptionCount == 2)

        // Nothing of the failed tick remains: its keys, values, versions and sequence numbers are as before it.
        try first.send([Call.get("lost"), Call.get("kept")])
        bus.endTick()
        let gets = try first.messages()
        #expect(gets.first?.errorName == "io.beacon.Properties.KeyNotFound")
        #expect(gets.last?.parameters?["property"]?["value"] == 1)
        #expect(gets.last?.parameters?["property"]?["version"] == 1)

        try second.send([Call.set("other", 5), Call.post("note", "y")])
        bus.endTick()
        let replies = try second.messages()
        #expect(replies.first?.parameters?["version"] == 2)
        #expect(replies.last?.parameters?["sequence"] == 1)
        let changes = try watcher.items("changes")
        #expect(changes.map { $0["key"] } == ["other"])
        #expect(changes.map { $0["value"] } == [5])
        let notes = try observer.items("notifications")
        #expect(notes.map { $0["userInfo"] } == ["y"])
        #expect(bus.storage.upsertedKeys == ["kept", "other"])
    }

    @Test("Sets of several clients in one tick make one commit and reach each watcher in one message")
    func oneCommitPerTick() throws {
        let bus = try InProcessBus()
        let watchers = try (0..<3).map { _ in try bus.connect() }
        for watcher in watchers { try watcher.send(Call.watch(["app.**"])) }
        bus.endTick()
        for watcher in watchers { _ = try watcher.messages() }
        let writers = try (0..<4).map { _ in try bus.connect() }
        let before = bus.storage.transactions.count

        for (index, writer) in writers.enumerated() {
            try writer.send([Call.set("app.k\(index)", .int(Int64(index))), Call.set("app.shared", .int(Int64(index)))])
        }
        // Nothing is committed, answered or published before the end of the tick.
        #expect(bus.storage.transactions.count == before)
        #expect(try writers[0].messages().isEmpty)
        bus.endTick()

        #expect(bus.storage.transactions.count == before + 1)
        for writer in writers { #expect(try writer.messages().count == 2) }
        for watcher in watchers {
            let writes = try watcher.writes()
            #expect(writes.count == 1)
            let messages = writes.flatMap { $0 }
            #expect(messages.count == 1)
            let changes = messages.first?.parameters?["changes"]?.arrayValue ?? []
            #expect(changes.count == 8)
            let versions = changes.compactMap { $0["version"]?.intValue }
            #expect(versions == Array(1...8))
        }
    }

    @Test("a slow watcher gets changes coalesced per key with the earliest old value and an exact overflow count")
    func slowWatcherCoalescing() throws {
        let bus = try InProcessBus()
        let watcher = try bus.connect()
        let writer = try bus.connect()
        try writer.send([Call.set("a", "a0"), Call.set("b", "b0")])
        try watcher.send(Call.watch(["*"], old: true))
        bus.endTick()
        _ = try writer.messages()
        _ = try watcher.messages()

        watcher.channel.isWritable = false
        for round in 1...3 {
            try writer.send([Call.set("a", .string("a\(round)")), Call.set("c", .int(Int64(round)))])
            bus.endTick()
        }
        try writer.send(Call.set("b", "b1"))
        bus.endTick()
        #expect(try watcher.messages().isEmpty)

        watcher.channel.isWritable = true
        watcher.channel.pipeline.fireChannelWritabilityChanged()
        bus.endTick()
        let messages = try watcher.messages()
        #expect(messages.count == 1)
        let parameters = messages.first?.parameters
        // Seven changes to three keys: four were merged away.
        #expect(parameters?["overflow"] == 4)
        let changes = parameters?["changes"]?.arrayValue ?? []
        #expect(changes.map { $0["key"] } == ["a", "c", "b"])
        #expect(changes.map { $0["value"] } == ["a3", 3, "b1"])
        #expect(changes.map { $0["old"] } == ["a0", nil, "b0"])
        #expect(parameters?["version"] == changes.last?["version"])
    }

    @Test("a slow observer is told exactly how many notifications it lost, then gets the next ones")
    func slowObserverOverflow() throws {
        let bus = try InProcessBus()
        let observer = try bus.connect()
        let poster = try bus.connect()
        try observer.send(Call.observe(["n.**"]))
        bus.endTick()
        _ = try observer.messages()

        observer.channel.isWritable = false
        try poster.send((0..<5).map { Call.post("n.x", .int(Int64($0))) })
        bus.endTick()
        try poster.send([Call.post("n.y", 5), Call.post("other", 6)])
        bus.endTick()
        observer.channel.isWritable = true
        observer.channel.pipeline.fireChannelWritabilityChanged()
        bus.endTick()
        let report = try observer.messages()
        #expect(report.count == 1)
        #expect(report.first?.parameters?["overflow"] == 6)
        #expect(report.first?.parameters?["notifications"]?.arrayValue?.isEmpty == true)

        try poster.send(Call.post("n.z", 7))
        bus.endTick()
        let next = try observer.messages()
        #expect(next.first?.parameters?["notifications"]?.arrayValue?.map { $0["userInfo"] } == [7])
        #expect(next.first?.parameters?["overflow"] == nil)
    }

    @Test("notifications keep each sender's order, within a tick and across ticks")
    func senderOrder() throws {
        let bus = try InProcessBus()
        let observer = try bus.connect()
        try observer.send(Call.observe(["**"]))
        bus.endTick()
        _ = try observer.messages()
        let senders = try (0..<3).map { _ in try bus.connect() }
        for round in 0..<4 {
            for (index, sender) in senders.enumerated() {
                try sender.send((0..<5).map { Call.post("s\(index)", .int(Int64(round * 5 + $0))) })
            }
            if round % 2 == 1 { bus.endTick() }
        }
        bus.endTick()
        // Two ends of tick: one write and one message each.
        let writes = try observer.writes()
        #expect(writes.map(\.count) == [1, 1])
        let notifications = writes.flatMap { $0 }.compactMap { $0.parameters?["notifications"]?.arrayValue }
            .flatMap { $0 }
        #expect(notifications.count == 60)
        let sequences = notifications.compactMap { $0["sequence"]?.intValue }
        #expect(sequences == Array(1...60))
        for index in 0..<3 {
            let values = notifications.filter { $0["name"] == .string("s\(index)") }.compactMap {
                $0["userInfo"]?.intValue
            }
            #expect(values == Array(0..<20))
        }
    }
}
