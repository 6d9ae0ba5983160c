import BeaconClient
import Testing

/// This file imports BeaconClient only: the types of its API must come with it.
@Suite("what import BeaconClient brings")
struct ExportsTests {
    @Test func jsonValueComesWithTheClient() {
        let userInfo: JSONValue = ["path": "/tmp/a.txt", "size": 3]
        #expect(userInfo["path"]?.stringValue == "/tmp/a.txt")
        #expect(userInfo["size"]?.intValue == 3)
        let address = BeaconAddress(socketPath: "/tmp/x.sock")
        #expect(address.socketPath == "/tmp/x.sock")
    }
}
