import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// post --object, monitor showing it, and clients showing each stream's delivery policy and suspension.
@Suite("beaconctl and delivery policies")
struct DeliveryCommandTests {
    @Test func monitorShowsTheObjectAndClientsTheSuspension() throws {
        let daemon = try TestDaemon()
        let monitor = try CLIProcess(["monitor", "--limit", "1"], address: daemon.address)
        try waitForStreams(1, daemon: daemon)
        // A suspended observer of one object, on a connection of its own.
        let observer = try BlockingVarlinkConnection(socketPath: daemon.socketPath, timeout: .seconds(20))
        defer { observer.close() }
        try observer.send(
            VarlinkCall(
                method: "io.beacon.Notifications.Observe",
                parameters: ["patterns": ["app.**"], "object": "door", "whileSuspended": "coalesce"], more: true))
        #expect(try observer.receive().error == nil)
        try observer.send(VarlinkCall(method: "io.beacon.Suspend", oneway: true))
        // The oneway call has no reply: the daemon's list of clients shows when it took effect.
        try waitUntil("a client is suspended", within: .seconds(20)) {
            let json = try CLI.run(["clients", "--json"], address: daemon.address).json()
            return (json["clients"]?.arrayValue ?? []).contains { $0["suspended"]?.boolValue == true }
        }

        let posted = try CLI.run(["post", "app.opened", "--object", "door"], address: daemon.address)
        #expect(posted.status == 0)
        #expect(try monitor.nextLine().contains("app.opened object=door"))
        #expect(try monitor.finish().status == 0)

        let clients = try CLI.run(["clients"], address: daemon.address)
        #expect(clients.lines.first?.contains("DELIVERY") == true)
        #expect(clients.lines.contains { $0.hasSuffix("coalesce object=door suspended(1) held 1") })
    }
}
