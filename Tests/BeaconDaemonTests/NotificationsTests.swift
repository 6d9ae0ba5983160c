import BeaconProtocol
import BeaconTestSupport
import Testing

@Suite("io.beacon.Notifications")
struct NotificationsTests {
    @Test("Observe receives matching posts in order with sequence and origin; oneway posts are delivered")
    func observe() throws {
        let daemon = try TestDaemon()
        let observer = try daemon.connect()
        let first = try observer.call(
            "io.beacon.Notifications.Observe", ["patterns": ["app.*.saved", "power.**"]], more: true)
        #expect(first.error == nil)
        #expect(first.continues)
        #expect(first["notifications"] == [])
        let start = try #require(first["sequence"]?.intValue)

        let poster = try daemon.connect()
        let posted = try poster.parameters(
            "io.beacon.Notifications.Post", ["name": "app.doc.saved", "userInfo": ["path": "/x"]])
        #expect(posted["sequence"]?.intValue == start + 1)
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "app.saved"])  // does not match
        poster.send("io.beacon.Notifications.Post", ["name": "power.battery.low"], oneway: true)
        _ = try poster.parameters("io.beacon.Notifications.Post", ["name": "power.ac", "userInfo": 1])

        let received = try observer.receiveItems("notifications", count: 3)
        #expect(received.map { $0["name"]?.stringValue } == ["app.doc.saved", "power.battery.low", "power.ac"])
        #expect(received.map { $0["sequence"]?.intValue } == [start + 1, start + 3, start + 4])
        #expect(received[0]["userInfo"] == ["path": "/x"])
        #expect(received[1]["userInfo"] == nil)
        #expect(received[0]["origin"]?["pid"]?.intValue == testPID)
        #expect(received[0]["origin"]?["uid"]?.intValue == testUID)
    }

    @Test("invalid and reserved names, invalid patterns, oversized userInfo")
    func invalidNames() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-value-size", "64"])
        let client = try daemon.connect()
        let large = try client.call(
            "io.beacon.Notifications.Post",
            ["name": "big.one", "userInfo": .string(String(repeating: "u", count: 100))]
        )
        #expect(large.error == "io.beacon.LimitExceeded")
        #expect(large["limit"] == "maxValueSize")
        #expect(large["maximum"] == 64)
        var reply = try client.call("io.beacon.Notifications.Post", ["name": "bad name"])
        #expect(reply.error == "io.beacon.Notifications.InvalidName")
        #expect(reply["name"] == "bad name")
        reply = try client.call("io.beacon.Notifications.Post", ["name": "lifecycle.didBecomeActive"])
        #expect(reply.error == "io.beacon.Notifications.InvalidName")
        reply = try client.call("io.beacon.Notifications.Observe", ["patterns": ["a*"]], more: true)
        #expect(reply.error == "io.beacon.Notifications.InvalidPattern")
        #expect(reply["pattern"] == "a*")
        reply = try client.call("io.beacon.Notifications.Observe", ["patterns": "a"], more: true)
        #expect(reply.error == "org.varlink.service.InvalidParameter")
        #expect(reply["parameter"] == "patterns")
    }

    @Test("a streaming connection accepts oneway posts but closes on any other call")
    func callsDuringStream() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        _ = try client.call("io.beacon.Notifications.Observe", ["patterns": ["chat.**"]], more: true)
        client.send("io.beacon.Notifications.Post", ["name": "chat.message", "userInfo": "hi"], oneway: true)
        let echoed = try client.receiveItems("notifications", count: 1)
        #expect(echoed.first?["userInfo"] == "hi")

        client.send("io.beacon.Properties.Get", ["key": "x"])
        let reply = try client.receive()
        #expect(reply.error == "io.beacon.ProtocolError")
        #expect(client.waitForClose())
    }

    @Test("an oversized post between others of the same read leaves them intact")
    func oversizedAmongOthers() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-value-size", "64"])
        let observer = try daemon.connect()
        _ = try observer.call("io.beacon.Notifications.Observe", ["patterns": ["mix.**"]], more: true)
        let poster = try daemon.connect()
        var bytes: [UInt8] = []
        for userInfo: JSONValue in ["a", .string(String(repeating: "u", count: 100)), ["b": [1, 2]]] {
            VarlinkCall(method: "io.beacon.Notifications.Post", parameters: ["name": "mix.one", "userInfo": userInfo])
                .encode(into: &bytes)
        }
        _ = poster.sendRaw(bytes)
        #expect(try poster.receive().error == nil)
        #expect(try poster.receive().error == "io.beacon.LimitExceeded")
        #expect(try poster.receive().error == nil)
        let received = try observer.receiveItems("notifications", count: 2)
        #expect(received.map { $0["userInfo"] } == ["a", ["b": [1, 2]]])
        #expect(received.map { $0["name"] } == ["mix.one", "mix.one"])
    }
}
