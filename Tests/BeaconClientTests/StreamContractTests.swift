import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Testing

/// The daemon writes its streams' replies by hand, for speed (`WatchReplyFrame`, the fan-out's encoders), and
/// BeaconClient reads them by hand: here every kind of reply the streams send is read as the generated types of
/// the interfaces declare it, so that what the daemon writes and what its `.varlink` files say cannot part.
@Suite("Stream replies as the interfaces declare them")
struct StreamContractTests {
    /// A connection of its own to `daemon`.
    static func connect(_ daemon: TestDaemon) throws -> BlockingVarlinkConnection {
        try BlockingVarlinkConnection(socketPath: daemon.socketPath, timeout: .seconds(20))
    }

    /// Receives the next reply on `connection`, within 20 s, and reads its parameters as `Reply`.
    static func next<Reply: VarlinkStruct>(
        _ type: Reply.Type, on connection: BlockingVarlinkConnection, _ what: String
    ) throws -> (Reply, VarlinkReply) {
        let reply = try connection.receive(deadline: BlockingDeadline(timeout: .seconds(20)))
        #expect(reply.error == nil, "\(what): \(String(describing: reply.error))")
        return (try Reply(varlinkMembers: reply.parameters, path: what), reply)
    }

    @Test("Watch: initial, replayed, live and deleted changes, old values, ephemeral owners, no origin")
    func watch() throws {
        let daemon = try TestDaemon()
        let writer = try Self.connect(daemon)
        defer { writer.close() }
        func call(_ method: String, _ parameters: [String: JSONValue]) throws {
            try writer.send(VarlinkCall(method: method, parameters: parameters))
            let reply = try writer.receive(deadline: BlockingDeadline(timeout: .seconds(20)))
            #expect(reply.error == nil, "\(method): \(String(describing: reply.error))")
        }
        try call(IOBeaconProperties.Set.method, ["key": "c.before", "value": ["x": [1, 2]]])

        let watcher = try Self.connect(daemon)
        defer { watcher.close() }
        try watcher.send(
            VarlinkCall(
                method: IOBeaconProperties.Watch.method,
                parameters: ["patterns": ["c.**"], "initial": true, "old": true], more: true))
        let (initial, _) = try Self.next(IOBeaconProperties.Watch.Reply.self, on: watcher, "initial Watch reply")
        #expect(initial.changes.map(\.key) == ["c.before"])

        try call(IOBeaconProperties.Set.method, ["key": "c.null", "value": .null])
        // An ephemeral value, whose owner then goes: its deletion comes as a change too.
        let owner = try Self.connect(daemon)
        try owner.send(
            VarlinkCall(
                method: IOBeaconProperties.Set.method, parameters: ["key": "c.mine", "value": "v", "ephemeral": true]))
        #expect(try owner.receive(deadline: BlockingDeadline(timeout: .seconds(20))).error == nil)
        try call(IOBeaconProperties.Unset.method, ["key": "c.before"])
        owner.close()
        var live: [IOBeaconProperties.Change] = []
        while live.count < 4 {
            let (reply, raw) = try Self.next(IOBeaconProperties.Watch.Reply.self, on: watcher, "live Watch reply")
            #expect(raw.continues)
            live += reply.changes
        }
        #expect(live.map(\.key) == ["c.null", "c.mine", "c.before", "c.mine"])
        #expect(live.map(\.deleted) == [false, false, true, true])
        #expect(live[2].old == ["x": [1, 2]], "the deletion carries the value it removed")
        #expect(live.allSatisfy { $0.origin != nil })

        // A replay from version 0, deletions included, and changes without their origin.
        let replaying = try Self.connect(daemon)
        defer { replaying.close() }
        try replaying.send(
            VarlinkCall(
                method: IOBeaconProperties.Watch.method,
                parameters: ["patterns": ["c.**"], "since": 0, "origin": false], more: true))
        let (replayed, _) = try Self.next(IOBeaconProperties.Watch.Reply.self, on: replaying, "replayed Watch reply")
        #expect(Set(replayed.changes.map(\.key)) == ["c.before", "c.null", "c.mine"])
        #expect(replayed.changes.first { $0.key == "c.mine" }?.deleted == true)
        #expect(replayed.changes.allSatisfy { $0.origin == nil })
        #expect(replayed.changes.first { $0.key == "c.before" }?.deleted == true)
    }

    @Test("Observe: the first reply, notifications with an object and user info, in order")
    func observe() throws {
        let daemon = try TestDaemon()
        let observer = try Self.connect(daemon)
        defer { observer.close() }
        try observer.send(
            VarlinkCall(
                method: IOBeaconNotifications.Observe.method, parameters: ["patterns": ["app.**"]], more: true))
        let (first, _) = try Self.next(IOBeaconNotifications.Observe.Reply.self, on: observer, "first Observe reply")
        #expect(first.notifications.isEmpty)

        let poster = try Self.connect(daemon)
        defer { poster.close() }
        try poster.send(
            VarlinkCall(
                method: IOBeaconNotifications.Post.method,
                parameters: ["name": "app.opened", "object": "door", "userInfo": ["by": "ada", "at": [1, 2.5]]]))
        let posted = try Self.next(IOBeaconNotifications.Post.Reply.self, on: poster, "Post reply").0
        try poster.send(VarlinkCall(method: IOBeaconNotifications.Post.method, parameters: ["name": "app.closed"]))
        _ = try Self.next(IOBeaconNotifications.Post.Reply.self, on: poster, "Post reply")

        var notifications: [IOBeaconNotifications.Notification] = []
        while notifications.count < 2 {
            let (reply, _) = try Self.next(IOBeaconNotifications.Observe.Reply.self, on: observer, "Observe reply")
            notifications += reply.notifications
        }
        #expect(notifications.map(\.name) == ["app.opened", "app.closed"])
        #expect(notifications[0].object == "door")
        #expect(notifications[0].userInfo == ["by": "ada", "at": [1, 2.5]])
        #expect(notifications[0].sequence == posted.sequence)
    }

    @Test("HoldSleep: the first reply registers the participant")
    func holdSleep() throws {
        let daemon = try TestDaemon()
        let participant = try Self.connect(daemon)
        defer { participant.close() }
        try participant.send(
            VarlinkCall(
                method: IOBeaconLifecycle.HoldSleep.method, parameters: ["description": "saving documents"],
                more: true))
        let (first, raw) = try Self.next(IOBeaconLifecycle.HoldSleep.Reply.self, on: participant, "HoldSleep reply")
        #expect(raw.continues)
        #expect(first.participant > 0)
    }

    @Test("Provide: the first reply's provider number, then a forwarded Set's request")
    func provide() throws {
        let daemon = try TestDaemon()
        let provider = try Self.connect(daemon)
        defer { provider.close() }
        try provider.send(
            VarlinkCall(method: IOBeaconProviders.Provide.method, parameters: ["patterns": ["p.**"]], more: true))
        let (first, _) = try Self.next(IOBeaconProviders.Provide.Reply.self, on: provider, "first Provide reply")
        #expect(first.provider != nil && first.requests.isEmpty)

        // A Set of null, ephemeral, with ifVersion: the caller waits for the provider's answer, which never comes.
        let caller = try Self.connect(daemon)
        defer { caller.close() }
        try caller.send(
            VarlinkCall(
                method: IOBeaconProperties.Set.method,
                parameters: ["key": "p.x", "value": .null, "ephemeral": true, "ifVersion": 0]))
        let (forwarded, _) = try Self.next(IOBeaconProviders.Provide.Reply.self, on: provider, "Provide reply")
        #expect(forwarded.provider == nil, "only the first reply carries the provider number")
        let request = try #require(forwarded.requests.first)
        #expect(request.method == .set && request.key == "p.x")
        #expect(request.ephemeral == true && request.answered && request.ifProviderVersion == 0)
        #expect(request.write != nil && request.origin.pid > 0)
    }
}
