import BeaconConfiguration
import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconDaemon

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("Store")
struct StoreTests {
    @Test(
        "the store is in WAL mode with the configured synchronous setting",
        arguments: [
            (PropertyStore.Synchronous.normal, "1"), (.full, "2"),
        ])
    func settings(synchronous: PropertyStore.Synchronous, expected: String) throws {
        let directory = try makeTemporaryDirectory("beacon-store-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try PropertyStore(path: directory + "/state/store.sqlite", synchronous: synchronous)
        #expect(try store.pragma("journal_mode") == "wal")
        #expect(try store.pragma("synchronous") == expected)
        #expect(try store.pragma("user_version") == String(PropertyStore.schemaVersion))
        var info = stat()
        #expect(stat(directory + "/state", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        try store.close()
    }

    @Test("ranges of rows against a model: random keys, upserts and deletes; each prefix's rows, in byte order")
    func rangesAgainstModel() throws {
        let directory = try makeTemporaryDirectory("beacon-store-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try PropertyStore(path: directory + "/store.sqlite", synchronous: .normal)
        var generator = SeededRandom(seed: 0x0510_7E44)
        // Segments that sort apart only by the dot ("a.b" and "a-b", "a" and "a0").
        let segments = ["a", "a0", "a-b", "b", "ab", "k1", "k10"]
        var model: [String: Int64] = [:]
        var version: Int64 = 0
        for _ in 0..<60 {
            var operations: [StoreOperation] = []
            for _ in 0..<20 {
                let depth = Int.random(in: 1...3, using: &generator)
                let key = (0..<depth).map { _ in segments.randomElement(using: &generator)! }.joined(separator: ".")
                if Bool.random(using: &generator) || model[key] == nil {
                    version += 1
                    model[key] = version
                    operations.append(
                        .upsertProperty(
                            StoredProperty(
                                key: key, value: Array("\(version)".utf8), version: version, modifiedUsec: version,
                                origin: Origin(uid: 1, pid: 2, command: nil))))
                } else {
                    model[key] = nil
                    operations.append(.deleteProperty(key: key))
                }
            }
            try store.commit(operations)
            for prefix in segments + ["a.a0", "a-b.k1", "k1.k10"] {
                var found: [String] = []
                try store.properties(from: prefix + ".", below: prefix + "/") { found.append($0.property.key) }
                let expected = model.keys.filter { $0.hasPrefix(prefix + ".") }.sorted {
                    $0.utf8.lexicographicallyPrecedes($1.utf8)
                }
                #expect(found == expected, "below \(prefix)")
                #expect(try store.property(prefix)?.property.version == model[prefix])
            }
            var changed: [String] = []
            let since = version - 10
            try store.properties(changedAfter: since) { changed.append($0.property.key) }
            #expect(changed.sorted() == model.filter { $0.value > since }.keys.sorted())
        }
        try store.close()
    }

    @Test("the recent Sets kept beside the store read back as written; a damaged or foreign file reads as none")
    func recentSets() throws {
        let directory = try makeTemporaryDirectory("beacon-store-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try PropertyStore(path: directory + "/store.sqlite", synchronous: .normal)
        #expect(store.savedRecentSets() == nil)
        let sets: [(version: Int64, name: String)] = [(11, "a.b"), (12, "a-b.c_d"), (40, "k")]
        #expect(store.saveRecentSets(RecentSets(floor: 10, end: 41, sets: sets)))
        let read = try #require(store.savedRecentSets())
        #expect(read.floor == 10 && read.end == 41)
        #expect(read.sets.map(\.version) == [11, 12, 40])
        #expect(read.sets.map(\.name) == ["a.b", "a-b.c_d", "k"])
        #expect(store.saveRecentSets(RecentSets(floor: 41, end: 41, sets: [])))
        #expect(try #require(store.savedRecentSets()).sets.isEmpty)
        // A file cut short, a version out of order or past the end, another format, another file.
        var error: Int32 = 0
        let good = try #require(POSIX.readFile(store.recentSetsPath, error: &error))
        #expect(store.saveRecentSets(RecentSets(floor: 10, end: 41, sets: sets)))
        let written = try #require(POSIX.readFile(store.recentSetsPath, error: &error))
        var outOfOrder = written
        outOfOrder[24] = 99
        var magic = written
        magic[7] = UInt8(ascii: "2")
        for damaged in [Array(written.dropLast()), outOfOrder, magic, Array("garbage".utf8), Array(good.prefix(20))] {
            let fd = open(store.recentSetsPath, O_WRONLY | O_TRUNC)
            try #require(fd >= 0)
            #expect(damaged.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == damaged.count)
            close(fd)
            #expect(store.savedRecentSets() == nil, "\(damaged)")
        }
        try store.close()
    }

    @Test("the version marker reads back what it recorded, its row's key too; one of the first format has no key")
    func versionMarker() throws {
        let directory = try makeTemporaryDirectory("beacon-store-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.sqlite-version"
        // The first format: "BEACONV1", the ceiling and the highest stored version.
        var first: [UInt8] = []
        for word: UInt64 in [0x3156_4e4f_4341_4542, 200_000, 42] {
            withUnsafeBytes(of: word.littleEndian) { first.append(contentsOf: $0) }
        }
        let fd = open(path, O_WRONLY | O_CREAT, 0o600)
        try #require(fd >= 0)
        #expect(first.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == 24)
        close(fd)
        let marker = try #require(VersionMarker(path: path))
        #expect(marker.read() == VersionMarker.Contents(ceiling: 200_000, stored: 42, storedKey: nil))
        #expect(marker.record(VersionMarker.Contents(ceiling: 300_000, stored: 43, storedKey: "a.long.key.name.x")))
        #expect(marker.record(VersionMarker.Contents(ceiling: 300_000, stored: 44, storedKey: "b")))
        let again = try #require(VersionMarker(path: path))
        #expect(again.read() == VersionMarker.Contents(ceiling: 300_000, stored: 44, storedKey: "b"))
    }

    @Test("a store of the first schema gains the machine column, keeps its rows, and then keeps machines")
    func machineColumnMigration() throws {
        let directory = try makeTemporaryDirectory("beacon-store-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.sqlite"
        // The schema as the first version wrote it, with one property and one tombstone.
        var old = try SQLiteConnection(path: path)
        try old.execute(
            """
            CREATE TABLE property (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, version INTEGER NOT NULL,
                modified INTEGER NOT NULL, uid INTEGER NOT NULL, pid INTEGER NOT NULL, command TEXT) WITHOUT ROWID;
            CREATE TABLE tombstone (key TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL,
                modified INTEGER NOT NULL, uid INTEGER NOT NULL, pid INTEGER NOT NULL, command TEXT) WITHOUT ROWID;
            INSERT INTO property VALUES ('a.b', '42', 3, 1000, 1000, 77, 'writer');
            INSERT INTO tombstone VALUES ('a.gone', 2, 900, 1000, 78, NULL);
            """)
        #expect(old.close() == nil)

        var store = try PropertyStore(path: path, synchronous: .normal)
        // Recorded, so that later starts skip the schema and the migration.
        #expect(try store.pragma("user_version") == String(PropertyStore.schemaVersion))
        var contents = try store.load()
        let row = try #require(try store.property("a.b"))
        #expect(row.parses)
        #expect(row.property.value == Array("42".utf8))
        #expect(row.property.origin == Origin(uid: 1000, pid: 77, command: "writer"))
        #expect(row.property.origin.machine == nil)
        #expect(contents.tombstones.map(\.key) == ["a.gone"])
        // The count a start reads instead of the rows, counted once by the migration.
        #expect(contents.meta["propertyCount"] == 1)
        #expect(try store.rowVersion(of: "a.b") == 3)
        #expect(try store.rowVersion(of: "a.gone") == 2)
        #expect(try store.rowVersion(of: "a.none") == nil)
        #expect(try store.highestVersion() == 3)

        let remote = Origin(uid: 1000, pid: 12, command: "beaconctl", machine: "kiosk-7")
        try store.commit([
            .upsertProperty(
                StoredProperty(key: "fleet.x", value: Array("1".utf8), version: 4, modifiedUsec: 1, origin: remote)),
            .upsertTombstone(StoredTombstone(key: "fleet.y", version: 5, modifiedUsec: 2, origin: remote)),
        ])
        try store.close()

        store = try PropertyStore(path: path, synchronous: .normal)
        contents = try store.load()
        let fleetX = try #require(try store.property("fleet.x")).property
        #expect(fleetX.origin == remote)
        #expect(fleetX.origin.machine == "kiosk-7")
        #expect(contents.tombstones.first { $0.key == "fleet.y" }?.origin.machine == "kiosk-7")
        #expect(try store.property("a.b")?.property.origin.machine == nil)
        try store.close()
    }
}
