import BeaconProtocol
import BeaconTestSupport
import Testing

@Suite("io.beacon.Daemon")
struct DaemonInterfaceTests {
    @Test("Status and Clients describe the daemon and its connections")
    func statusAndClients() throws {
        let daemon = try TestDaemon()
        let watcher = try daemon.connect()
        _ = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["a.**", "b"]], more: true)
        let client = try daemon.connect()
        try client.set("a.b", 1)

        let status = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(status["pid"]?.intValue == Int64(daemon.pid))
        #expect(status["uid"]?.intValue == testUID)
        #expect(status["clients"] == 2)
        #expect(status["subscriptions"] == 1)
        #expect(status["properties"] == 1)
        #expect(status["software"]?.stringValue?.isEmpty == false)
        #expect(status["address"]?.stringValue == "unix:" + daemon.socketPath)

        let clients = try client.parameters("io.beacon.Daemon.Clients")["clients"]?.elements ?? []
        #expect(clients.count == 2)
        let streaming = clients.first { $0["stream"] != nil }
        #expect(streaming?["stream"] == "io.beacon.Properties.Watch")
        #expect(streaming?["patterns"] == ["a.**", "b"])
        #expect(streaming?["pid"]?.intValue == testPID)
        let ids = clients.compactMap { $0["id"]?.intValue }
        #expect(ids == ids.sorted())

        // STATUS= lines reach the service manager.
        try #require(daemon.notify).wait(for: "STATUS=2 clients, 1 subscriptions, 1 properties")
    }
}
