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
        var info = stat()
        #expect(stat(directory + "/state", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        try store.close()
    }
}
