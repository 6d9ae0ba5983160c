import BeaconProtocol
import BeaconTestSupport
import Testing

@testable import BeaconDaemon

/// ``PropertyTable`` on its own, against a model: a dictionary of the committed state, and one of the state that
/// a failed commit must bring back.
@Suite("PropertyTable against a model")
struct PropertyTableTests {
    static let origin = Origin(uid: 1000, pid: 42, command: "test")

    /// A table with its writer and storage: `commit()` commits like the bus's end of tick, a failure rolls back.
    struct Fixture {
        let storage: TestStorage
        let writer: StoreWriter
        let table: PropertyTable
        var now: Int64 = 1_000_000

        init(historyLimit: Int = 1000, storage: TestStorage = TestStorage()) {
            self.storage = storage
            writer = StoreWriter(storage: storage)
            table = PropertyTable(writer: writer, historyLimit: historyLimit)
        }

        mutating func set(_ name: String, _ value: String, owner: Int? = nil) -> ChangeEvent {
            now += 1
            let key = PropertyTable.trustedKey(name)
            return table.set(
                key: key, value: Array(value.utf8), at: (try? table.index(forKey: name)) ?? nil, ephemeralOwner: owner,
                origin: PropertyTableTests.origin, now: now)
        }

        mutating func delete(_ name: String) -> ChangeEvent? {
            now += 1
            // As the bus does: the table deletes what it holds in memory, read from the store first.
            _ = try? table.index(forKey: name)
            return table.delete(name, origin: PropertyTableTests.origin, now: now)
        }

        /// Commits, or with `failing`, fails the commit and rolls the table back; returns whether it committed.
        func commit(failing: Bool = false) -> Bool {
            storage.failures = failing ? 1 : 0
            do {
                try writer.commit()
                table.committed()
                return true
            } catch {
                table.rollBack()
                return false
            }
        }

        /// Every key's value, as the table reads it (memory and store).
        var values: [String: String] {
            let all = (try? table.entries(below: nil)) ?? []
            return Dictionary(
                uniqueKeysWithValues: all.map { ($0.key.rawValue, String(decoding: $0.entry.value, as: UTF8.self)) })
        }
    }

    /// A small alphabet of keys, so that operations meet the same keys often, with prefixes that nest (`a`, `a.b`)
    /// and that sort apart only by the dot (`a.b` and `a-b`).
    static let names = ["a", "a.b", "a.b.c", "a-b", "a.c", "b", "b.a", "ab", "a.bc"]

    @Test("random sets, deletes and failed commits: values, versions, keys below a prefix and replays match")
    func randomOperations() throws {
        try randomOperations(letGo: false)
        try randomOperations(letGo: true)
    }

    /// With `letGo`, the table lets go of its stored entries after some commits, so that later calls read them
    /// from the store again.
    func randomOperations(letGo: Bool) throws {
        var generator = SeededRandom(seed: 0x5EED_0042)
        var fixture = Fixture()
        var committed: [String: String] = [:]
        var pending: [String: String] = [:]
        var lastVersion: Int64 = 0
        var committedVersion: Int64 = 0
        /// The version each key's latest committed change has, deletions included.
        var changedAt: [String: Int64] = [:]
        var pendingChangedAt: [String: Int64] = [:]
        for round in 0..<400 {
            pending = committed
            pendingChangedAt = changedAt
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let name = Self.names.randomElement(using: &generator)!
                if Bool.random(using: &generator) || pending[name] == nil {
                    let value = "\(round).\(Int.random(in: 0..<100, using: &generator))"
                    let change = fixture.set(name, value)
                    #expect(change.version > lastVersion, "versions only grow")
                    #expect(change.old.map { String(decoding: $0, as: UTF8.self) } == pending[name])
                    lastVersion = change.version
                    pending[name] = value
                    pendingChangedAt[name] = change.version
                } else {
                    guard let change = fixture.delete(name) else {
                        Issue.record("\(name) was set and not deleted")
                        continue
                    }
                    #expect(change.version > lastVersion)
                    #expect(change.value == nil)
                    lastVersion = change.version
                    pending[name] = nil
                    pendingChangedAt[name] = change.version
                }
            }
            #expect(fixture.values == pending, "round \(round), before the commit")
            if fixture.commit(failing: round % 7 == 3) {
                committed = pending
                changedAt = pendingChangedAt
                committedVersion = lastVersion
            } else {
                #expect(fixture.values == committed, "round \(round): a failed commit brings the last state back")
                #expect(!fixture.table.hasUncommittedChanges)
                // Nothing of the undone tick was published: its versions are handed out again.
                #expect(fixture.table.version == committedVersion)
                lastVersion = committedVersion
            }
            #expect(fixture.values == committed)
            #expect(fixture.table.count == committed.count)
            if letGo && Bool.random(using: &generator) {
                fixture.table.evictStoredEntries()
                #expect(fixture.table.entries.isEmpty)
                // Replays from before the keys kept of the recent Sets read every stored row.
                fixture.table.forgetRecent(keeping: Int.random(in: 0...3, using: &generator))
            }

            // Keys below a prefix: every key equal to it or under it (a dot after it), sorted.
            for prefixName in ["a", "a.b", "b", "ab"] {
                let prefix = PropertyTable.trustedKey(prefixName)
                let expected = committed.keys.map(PropertyTable.trustedKey).filter { $0.hasPrefix(prefix) }.sorted()
                #expect(try fixture.table.keys(below: prefix) == expected, "below \(prefixName), round \(round)")
            }
            #expect(try fixture.table.keys(below: nil) == committed.keys.map(PropertyTable.trustedKey).sorted())

            // A replay from any committed version: the latest state of each key changed after it, in order.
            let since = Int64.random(in: 0...fixture.table.version, using: &generator)
            let replay = try #require(try fixture.table.changes(since: since) { _ in true })
            let expected = changedAt.filter { $0.value > since }.sorted { $0.value < $1.value }
            #expect(replay.map(\.key.rawValue) == expected.map(\.key), "since \(since), round \(round)")
            #expect(replay.map(\.version) == expected.map(\.value))
            for change in replay {
                #expect(change.value.map { String(decoding: $0, as: UTF8.self) } == committed[change.key.rawValue])
            }
        }
    }

    @Test("ephemeral keys: deleted with their owner, in key order; a failed commit gives them back to it")
    func ephemeralOwners() {
        var fixture = Fixture()
        _ = fixture.set("eph.b", "1", owner: 7)
        _ = fixture.set("eph.a", "2", owner: 7)
        _ = fixture.set("eph.c", "3", owner: 8)
        _ = fixture.set("kept", "4")
        #expect(fixture.commit())
        let deleted = fixture.table.deleteEphemeral(of: 7, origin: Self.origin, now: 2_000_000)
        #expect(deleted.map(\.key.rawValue) == ["eph.a", "eph.b"])
        #expect(fixture.values == ["eph.c": "3", "kept": "4"])
        #expect(!fixture.commit(failing: true))
        #expect(fixture.values == ["eph.a": "2", "eph.b": "1", "eph.c": "3", "kept": "4"])
        #expect(fixture.table.ephemeralKeys[7] == ["eph.a", "eph.b"])
        // Set by a client without an owner, a key stops being its former owner's.
        _ = fixture.set("eph.a", "5")
        #expect(fixture.commit())
        #expect(
            fixture.table.deleteEphemeral(of: 7, origin: Self.origin, now: 3_000_000).map(\.key.rawValue) == ["eph.b"])
        #expect(fixture.values["eph.a"] == "5")
    }

    /// Each change's key, version and value, to compare replays.
    static func summary(_ changes: [ChangeEvent]?) -> [String] {
        (changes ?? []).map {
            "\($0.key.rawValue) \($0.version) \($0.value.map { String(decoding: $0, as: UTF8.self) } ?? "-")"
        }
    }

    @Test("replays from before a clean restart read the Sets the stop kept; after an unclean one, the store's rows")
    func replaysAcrossRestarts() throws {
        var fixture = Fixture()
        for index in 0..<20 { _ = fixture.set("r.\(index % 7)", "\(index)") }
        _ = fixture.delete("r.3")
        #expect(fixture.commit())
        let since = fixture.table.version - 6
        let before = try #require(try fixture.table.changes(since: since) { _ in true })
        #expect(before.count >= 3)
        fixture.table.finish()
        #expect(fixture.commit())
        #expect(fixture.table.saveRecent())

        // A clean restart: the kept Sets answer, and the store's rows are not scanned.
        var restarted = Fixture(storage: fixture.storage)
        try restarted.table.load(try fixture.storage.load(), now: 0) { _, _, _ in }
        let reads = fixture.storage.changedAfterReads
        #expect(try Self.summary(restarted.table.changes(since: since) { _ in true }) == Self.summary(before))
        #expect(fixture.storage.changedAfterReads == reads)

        // A change, then a stop without keeping the Sets (a crash): the next start reads the rows.
        _ = restarted.set("r.0", "after")
        #expect(restarted.commit())
        let later = try #require(try restarted.table.changes(since: since) { _ in true })
        let crashed = Fixture(storage: fixture.storage)
        try crashed.table.load(try fixture.storage.load(), now: 0) { _, _, _ in }
        #expect(try Self.summary(crashed.table.changes(since: since) { _ in true }) == Self.summary(later))
        #expect(fixture.storage.changedAfterReads == reads + 1)
    }

    @Test("history beyond the limit is let go: a replay from before it is refused, one after it answered")
    func historyLimit() throws {
        var fixture = Fixture(historyLimit: 10)
        for index in 0..<30 {
            _ = fixture.set("k.\(index)", "\(index)")
        }
        for index in 0..<30 {
            _ = fixture.delete("k.\(index)")
        }
        #expect(fixture.commit())
        #expect(fixture.table.tombstones.count <= 11)
        #expect(try fixture.table.changes(since: 0) { _ in true } == nil, "the start of the history is gone")
        let recent = try #require(try fixture.table.changes(since: fixture.table.version - 5) { _ in true })
        #expect(recent.map(\.key.rawValue) == (25..<30).map { "k.\($0)" })
    }
}
