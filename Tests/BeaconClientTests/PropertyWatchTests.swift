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

    private func reply(_ changes: [JSONValue], version: Int64, resync: Bool = false) -> [String: JSONValue] {
        var reply: [String: JSONValue] = ["changes": .array(changes), "version": .int(version)]
        if resync { reply["resync"] = true }
        return reply
    }

    @Test("the first subscription asks for initial values, a later one for the changes since the last version")
    func parameters() throws {
        let watch = PropertyWatch(patterns: ["a.**"], initial: true, old: false)
        #expect(watch.parameters()["initial"] == true)
        #expect(watch.parameters()["since"] == nil)
        let first = try #require(try watch.batch(from: reply([change("a.x", 1, 3)], version: 7), first: true))
        #expect(first.isSnapshot && first.isFirst)
        #expect(first.kind == .initial)
        let later = try #require(try watch.batch(from: reply([change("a.y", 2, 8)], version: 8), first: false))
        #expect(later.kind == .changes)
        #expect(watch.parameters()["since"] == 8)
        #expect(watch.parameters()["initial"] == nil)
        let resumed = try #require(try watch.batch(from: reply([], version: 8), first: true))
        #expect(!resumed.isSnapshot)
        #expect(resumed.kind == .replay)
    }

    @Test("a resynchronisation reports keys that disappeared as deletions")
    func resync() throws {
        let watch = PropertyWatch(patterns: ["**"], initial: true, old: false)
        _ = try watch.batch(from: reply([change("a", 1, 1), change("b", 2, 2)], version: 2), first: true)
        let batch = try #require(
            try watch.batch(from: reply([change("b", 3, 9)], version: 9, resync: true), first: true))
        #expect(batch.resync && batch.isSnapshot)
        #expect(batch.kind == .resync)
        #expect(batch.changes.map(\.key) == ["a", "b"])
        #expect(batch.changes[0].deleted && batch.changes[0].value == nil)
        #expect(batch.changes[1].value == 3)
    }

    @Test("a daemon whose version went back is asked for every value again")
    func versionWentBack() throws {
        let watch = PropertyWatch(patterns: ["**"], initial: false, old: false)
        _ = try watch.batch(from: reply([change("a", 1, 50)], version: 50), first: false)
        #expect(watch.parameters()["since"] == 50)
        #expect(try watch.batch(from: reply([], version: 3), first: true) == nil)
        #expect(watch.parameters()["initial"] == true)
        let batch = try #require(try watch.batch(from: reply([change("b", 1, 2)], version: 3), first: true))
        #expect(batch.resync)
        #expect(batch.kind == .resync)
        #expect(batch.changes.map(\.key) == ["a", "b"])
        #expect(batch.changes[0].deleted)
    }

    @Test("a malformed reply is an invalidReply error")
    func malformed() {
        let watch = PropertyWatch(patterns: ["**"], initial: false, old: false)
        #expect {
            _ = try watch.batch(from: ["changes": [1]], first: true)
        } throws: { ($0 as? BeaconError)?.code == .invalidReply }
    }
}
