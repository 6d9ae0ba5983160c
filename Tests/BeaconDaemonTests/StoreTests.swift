import Testing

@testable import BeaconDaemon

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("Store")
struct StoreTests {
    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/beacon-store-test-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        try #require(created)
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test(
        "the store is in WAL mode with the configured synchronous setting",
        arguments: [
            (PropertyStore.Synchronous.normal, "1"), (.full, "2"),
        ])
    func settings(synchronous: PropertyStore.Synchronous, expected: String) throws {
        let directory = try Self.temporaryDirectory()
        defer {
            for name in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm"] {
                unlink(directory + "/state/" + name)
            }
            rmdir(directory + "/state")
            rmdir(directory)
        }
        let store = try PropertyStore(path: directory + "/state/store.sqlite", synchronous: synchronous)
        #expect(try store.pragma("journal_mode") == "wal")
        #expect(try store.pragma("synchronous") == expected)
        var info = stat()
        #expect(stat(directory + "/state", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        try store.close()
    }
}
