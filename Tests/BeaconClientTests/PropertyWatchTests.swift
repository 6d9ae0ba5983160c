import BeaconProtocol
import Testing

@testable import BeaconClient

@Suite("watch bookkeeping across reconnections")
struct PropertyWatchTests {
    private func change(_ key: String, _ value: JSONValue?, _ version: Int64) -> JSONValue {
        var members: [String: JSONValue] = [
            "key": .string(key), "version": .int(version), "deleted": .bool(value == nil),
            "origin": ["uid": 1, "pid": 2],
        ]
        if let value { members["value"] = value }
        return .object(members)
    }

    private func reply(_ changes: [JSONValue], version: Int64, resync: Bool = false) throws -> WatchReply {
        var parameters: [String: JSONValue] = ["changes": .array(changes), "version": .int(version)]
        if resync { parameters["resync"] = true }
        let decoded = try decode(VarlinkReply(parameters: parameters, continues: true).description)
        guard case .reply(let reply, continues: true) = decoded else {
            Issue.record("not a continued reply")
            throw BeaconError.invalidReply("not a continued reply")
        }
        return reply
    }

    /// The reply frame `text` as a Watch subscription reads it.
    private func decode(_ text: String) throws -> DecodedReply<WatchReply> {
        try Array(text.utf8).withUnsafeBytes { frame in try WatchReply.decode(frame, .default) }
    }

    @Test("the first subscription asks for initial values, a later one for the changes since the last version")
    func parameters() throws {
        let watch = PropertyWatch(patterns: ["a.**"], initial: true, old: false)
        #expect(watch.parameters()["initial"] == true)
        #expect(watch.parameters()["since"] == nil)
        let first = try #require(watch.batch(from: try reply([change("a.x", 1, 3)], version: 7), first: true))
        #expect(first.isSnapshot && first.isFirst)
        #expect(first.kind == .initial)
        let later = try #require(watch.batch(from: try reply([change("a.y", 2, 8)], version: 8), first: false))
        #expect(later.kind == .changes)
        #expect(watch.parameters()["since"] == 8)
        #expect(watch.parameters()["initial"] == nil)
        let resumed = try #require(watch.batch(from: try reply([], version: 8), first: true))
        #expect(!resumed.isSnapshot)
        #expect(resumed.kind == .replay)
    }

    @Test("a resynchronisation reports keys that disappeared as deletions")
    func resync() throws {
        let watch = PropertyWatch(patterns: ["**"], initial: true, old: false)
        _ = watch.batch(from: try reply([change("a", 1, 1), change("b", 2, 2)], version: 2), first: true)
        let batch = try #require(
            watch.batch(from: try reply([change("b", 3, 9)], version: 9, resync: true), first: true))
        #expect(batch.resync && batch.isSnapshot)
        #expect(batch.kind == .resync)
        #expect(batch.changes.map(\.key) == ["a", "b"])
        #expect(batch.changes[0].deleted && batch.changes[0].value == nil)
        #expect(batch.changes[1].value == 3)
    }

    @Test("a watch asks for origins unless told not to")
    func originParameter() {
        #expect(PropertyWatch(patterns: ["a"], initial: false, old: false).parameters()["origin"] == nil)
        let lean = PropertyWatch(patterns: ["a"], initial: false, old: false, origin: false)
        #expect(lean.parameters()["origin"] == false)
    }

    @Test("a daemon whose version went back is asked for every value again")
    func versionWentBack() throws {
        let watch = PropertyWatch(patterns: ["**"], initial: false, old: false)
        _ = watch.batch(from: try reply([change("a", 1, 50)], version: 50), first: false)
        #expect(watch.parameters()["since"] == 50)
        #expect(watch.batch(from: try reply([], version: 3), first: true) == nil)
        #expect(watch.parameters()["initial"] == true)
        let batch = try #require(watch.batch(from: try reply([change("b", 1, 2)], version: 3), first: true))
        #expect(batch.resync)
        #expect(batch.kind == .resync)
        #expect(batch.changes.map(\.key) == ["a", "b"])
        #expect(batch.changes[0].deleted)
    }

    @Test("a Watch reply is read member by member: every field of a change, unknown members skipped")
    func frameFields() throws {
        let text = """
            {"parameters":{"future":{"a":[1,{"b":2}]},"changes":[{"key":"a.b","value":{"x":[1,2]},"old":3,\
            "version":12,"deleted":false,"default":true,"locked":true,"ephemeral":false,\
            "origin":{"uid":1000,"pid":42,"command":"a-command-longer-than-15","connection":7}},\
            {"key":"a.c","version":13,"deleted":true,"origin":null}],"version":13,"resync":true,"overflow":4},\
            "continues":true,"later":"ignored"}
            """
        guard case .reply(let reply, let continues) = try decode(text) else {
            Issue.record("an error reply")
            return
        }
        #expect(continues)
        #expect(reply.version == 13 && reply.resync && reply.overflow == 4)
        #expect(reply.changes.count == 2)
        let set = reply.changes[0]
        #expect(set.key == "a.b" && set.value == ["x": [1, 2]] && set.old == 3 && set.version == 12)
        #expect(!set.deleted && set.isDefault && set.isLocked)
        #expect(set.origin == BeaconOrigin(uid: 1000, pid: 42, command: "a-command-longer-than-15"))
        let deleted = reply.changes[1]
        #expect(deleted.key == "a.c" && deleted.deleted && deleted.value == nil && deleted.origin == nil)
    }

    @Test("an error reply to a Watch is the daemon's error, whatever the order of its members")
    func errorReply() throws {
        for text in [
            #"{"error":"io.beacon.Properties.InvalidPattern","parameters":{"pattern":"a..b","reason":"empty"}}"#,
            #"{"parameters":{"pattern":"a..b","reason":"empty"},"error":"io.beacon.Properties.InvalidPattern"}"#,
        ] {
            guard case .error(let error) = try decode(text) else {
                Issue.record("not read as an error: \(text)")
                continue
            }
            #expect(error.name == "io.beacon.Properties.InvalidPattern")
            #expect(error.parameters["pattern"] == "a..b")
        }
    }

    @Test("a malformed Watch reply is a protocol error, which closes the connection as an invalid reply")
    func malformed() {
        for text in [
            #"{"parameters":{"changes":[1],"version":1}}"#,
            #"{"parameters":{"changes":[{"value":1}],"version":1}}"#,
            #"{"parameters":{"changes":[],"version":"1"}}"#,
            #"{"parameters":{"changes":[]}}"#,
            #"{"parameters":{"changes":[{"key":"a","version":1}],"version":1}"#,
            #"{"parameters":{"changes":[{"key":"a","version":1},],"version":1}}"#,
        ] {
            #expect(throws: VarlinkError.self, "\(text)") { _ = try decode(text) }
        }
    }

    /// `changes` and `version` as a key watch of `key` reads them.
    private func keyReply(_ key: String, _ changes: [JSONValue], version: Int64, resync: Bool = false) throws
        -> KeyWatchReply
    {
        var parameters: [String: JSONValue] = ["changes": .array(changes), "version": .int(version)]
        if resync { parameters["resync"] = true }
        let text = VarlinkReply(parameters: parameters, continues: true).description
        let decoded = try Array(text.utf8).withUnsafeBytes { frame in
            try KeyWatchReply.decoder(for: key)(frame, .default)
        }
        guard case .reply(let reply, continues: true) = decoded else {
            Issue.record("not a continued reply")
            throw BeaconError.invalidReply("not a continued reply")
        }
        return reply
    }

    @Test("a key watch keeps the key's last change in a reply, a deletion as no value, and ignores other keys")
    func keyWatchReply() throws {
        let set = try keyReply("a.b", [change("a.b", 1, 4), change("a.bc", 2, 5), change("a.b", 3, 6)], version: 6)
        #expect(set.latest == RemoteSnapshot(json: 3, keyVersion: 6, version: 6))
        #expect(set.version == 6 && !set.resync)
        let deleted = try keyReply("a.b", [change("a.b", nil, 7)], version: 7)
        #expect(deleted.latest == RemoteSnapshot(json: nil, keyVersion: 0, version: 7))
        #expect(deleted.latest?.json == Optional<JSONValue>.none)
        let null = try keyReply("a.b", [change("a.b", .null, 8)], version: 8)
        #expect(null.latest?.json == .some(.null))
        #expect(try keyReply("a.b", [change("a.bc", 1, 9)], version: 9).latest == nil)
        let error = try Array(#"{"error":"io.beacon.Properties.InvalidPattern","parameters":{}}"#.utf8).withUnsafeBytes
        {
            try KeyWatchReply.decoder(for: "a.b")($0, .default)
        }
        guard case .error(let varlinkError) = error else {
            Issue.record("an error reply not read as one")
            return
        }
        #expect(varlinkError.name == "io.beacon.Properties.InvalidPattern")
    }

    @Test("a key watch's bookkeeping: the first reply is a snapshot, a version gone back asks again with initial")
    func keyWatchBookkeeping() throws {
        let watch = PropertyWatch(patterns: ["a.b"], initial: true, old: false, origin: false)
        /// Whether the reply is a snapshot, and its epoch.
        func account(_ changes: [JSONValue], version: Int64, resync: Bool = false, first: Bool) throws -> [Int]? {
            watch.account(try keyReply("a.b", changes, version: version, resync: resync), first: first).map {
                [$0.isSnapshot ? 1 : 0, $0.epoch]
            }
        }
        #expect(try account([], version: 5, first: true) == [1, 0])
        #expect(try account([change("a.b", 1, 6)], version: 6, first: false) == [0, 0])
        #expect(watch.parameters()["since"] == 6)
        // Resumed after a reconnection: not a snapshot, unless the daemon says it resynchronised.
        #expect(try account([], version: 6, first: true) == [0, 0])
        #expect(try account([], version: 7, resync: true, first: true) == [1, 0])
        // The daemon's version went back (its store was replaced): subscribe again, asking for every value; that
        // reply is a snapshot of a new epoch, from which versions start again.
        #expect(try account([], version: 2, first: true) == nil)
        #expect(watch.parameters()["initial"] == true)
        #expect(try account([change("a.b", 1, 1)], version: 2, first: true) == [1, 1])
        #expect(watch.parameters()["since"] == 2)
        #expect(try account([change("a.b", 2, 3)], version: 3, first: false) == [0, 1])
        #expect(watch.parameters()["since"] == 3)
    }
}
