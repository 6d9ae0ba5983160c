import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// status, clients, introspect and call against the real daemon.
@Suite struct DaemonCommandTests {
    @Test func statusAsTextAndJSON() throws {
        let daemon = try TestDaemon()
        #expect(try CLI.run(["set", "a.b", "1"], address: daemon.address).status == 0)

        let text = try CLI.run(["status"], address: daemon.address)
        #expect(text.status == 0)
        #expect(text.stdout.contains("Address: \(daemon.address)"))
        #expect(text.stdout.contains("Started: "))
        #expect(text.stdout.contains("(up "))
        #expect(text.stdout.contains("Properties: 1 (version 1)"))

        let json = try CLI.run(["status", "--json"], address: daemon.address).json()
        let status = try #require(json["status"]?.objectValue)
        #expect(status["address"]?.stringValue == daemon.address)
        #expect(status["properties"] == 1)
        #expect(status["version"] == 1)
        for field in ["software", "pid", "uid", "startedUsec", "store", "clients", "subscriptions", "sequence"] {
            #expect(status[field] != nil, "status lacks \(field)")
        }
    }

    @Test func clientsListsStreamsAndThisConnection() throws {
        let daemon = try TestDaemon()
        let watcher = try CLIProcess(["watch", "app.**", "power.*", "--initial"], address: daemon.address)
        try waitForStreams(1, daemon: daemon)

        let json = try CLI.run(["clients", "--json"], address: daemon.address).json()
        let clients = json["clients"]?.arrayValue ?? []
        #expect(clients.count == 2)
        let stream = try #require(clients.first { $0["stream"]?.isNull == false && $0["stream"] != nil })
        #expect(stream["stream"] == "io.beacon.Properties.Watch")
        #expect(stream["patterns"] == ["app.**", "power.*"])
        #expect(stream["command"] == "beaconctl")

        let text = try CLI.run(["clients"], address: daemon.address)
        #expect(text.lines.count == 3)
        #expect(text.lines.first?.hasPrefix("ID") == true)
        #expect(text.stdout.contains("Watch"))
        #expect(text.stdout.contains("app.** power.*"))
        _ = watcher
    }

    @Test func introspectListsInterfacesAndPrintsIDL() throws {
        let daemon = try TestDaemon()
        let info = try CLI.run(["introspect"], address: daemon.address)
        #expect(info.status == 0)
        for name in ["io.beacon.Properties", "io.beacon.Notifications", "io.beacon.Daemon", "org.varlink.service"] {
            #expect(info.lines.contains("  " + name), "\(name) missing")
        }
        let json = try CLI.run(["introspect", "--json"], address: daemon.address).json()
        #expect(json["interfaces"]?.arrayValue?.contains("io.beacon.Properties") == true)

        let idl = try CLI.run(["introspect", "io.beacon.Properties"], address: daemon.address)
        #expect(idl.status == 0)
        #expect(idl.stdout.contains("interface io.beacon.Properties\n"))
        #expect(idl.stdout.contains("method Watch("))

        let unknown = try CLI.run(["introspect", "com.example.Nope"], address: daemon.address)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.hasPrefix("Error: org.varlink.service.InterfaceNotFound: "))
    }

    @Test func callSendsRawVarlink() throws {
        let daemon = try TestDaemon()
        #expect(try CLI.run(["set", "a", "[1]"], address: daemon.address).status == 0)

        let get = try CLI.run(
            ["call", "io.beacon.Properties.Get", "{\"key\":\"a\"}", "--json"], address: daemon.address)
        #expect(get.status == 0)
        #expect(try get.json()["property"]?["value"] == [1])

        let pretty = try CLI.run(["call", "io.beacon.Properties.Get", "{\"key\":\"a\"}"], address: daemon.address)
        #expect(pretty.stdout.hasPrefix("{\n  \"property\": {\n"))

        let missing = try CLI.run(["call", "io.beacon.Nope.Method"], address: daemon.address)
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("Error: org.varlink.service."))

        let needsMore = try CLI.run(
            ["call", "io.beacon.Properties.Watch", "{\"patterns\":[\"**\"]}"], address: daemon.address)
        #expect(needsMore.status == 1)
        #expect(needsMore.stderr.contains("org.varlink.service.ExpectedMore"))

        let streamed = try CLI.run(
            [
                "call", "io.beacon.Properties.Watch", "{\"patterns\":[\"**\"],\"initial\":true}", "--more", "--limit",
                "1",
                "--json",
            ],
            address: daemon.address)
        #expect(streamed.status == 0)
        #expect(streamed.lines.count == 1)
        let first = try JSONValue(parsing: streamed.lines[0])
        #expect(first["changes"]?.arrayValue?.first?["key"] == "a")

        let oneway = try CLI.run(
            ["call", "io.beacon.Notifications.Post", "{\"name\":\"x.y\"}", "--oneway"],
            address: daemon.address)
        #expect(oneway.status == 0)
        #expect(oneway.stdout.isEmpty)
    }

    @Test("call checks the parameters against the daemon's own description of the interface before sending")
    func callChecksParameters() throws {
        let daemon = try TestDaemon()
        for (parameters, message) in [
            ("{\"kye\":\"a\"}", "io.beacon.Properties.Get has no parameter kye; it takes key"),
            ("{}", "io.beacon.Properties.Get needs key (string)"),
            ("{\"key\":5}", "io.beacon.Properties.Get's key must be string, not 5"),
        ] {
            let refused = try CLI.run(["call", "io.beacon.Properties.Get", parameters], address: daemon.address)
            #expect(refused.status == 2, "\(parameters): \(refused.stderr)")
            #expect(refused.stderr.contains(message), "\(parameters): \(refused.stderr)")
        }
        // An object parameter may be null: Set's value is one.
        let null = try CLI.run(
            ["call", "io.beacon.Properties.Set", "{\"key\":\"n\",\"value\":null}"], address: daemon.address)
        #expect(null.status == 0, "\(null.stderr)")
        // Nothing was sent: a oneway Post that the check refuses posts nothing.
        let observer = try BlockingVarlinkConnection(socketPath: daemon.socketPath, timeout: .seconds(20))
        defer { observer.close() }
        try observer.send(
            VarlinkCall(
                method: IOBeaconNotifications.Observe.method, parameters: ["patterns": ["x.**"]], more: true))
        _ = try observer.receive(deadline: BlockingDeadline(timeout: .seconds(20)))
        let refused = try CLI.run(
            ["call", "io.beacon.Notifications.Post", "{\"name\":\"x.refused\",\"objet\":\"o\"}", "--oneway"],
            address: daemon.address)
        #expect(refused.status == 2)
        // --unchecked sends as given: the daemon's own answer comes back.
        let sent = try CLI.run(
            ["call", "io.beacon.Properties.Get", "{\"key\":5}", "--unchecked"], address: daemon.address)
        #expect(sent.status == 1)
        #expect(sent.stderr.contains("org.varlink.service.InvalidParameter"))
        #expect(
            try CLI.run(
                ["call", "io.beacon.Notifications.Post", "{\"name\":\"x.sent\"}", "--oneway"], address: daemon.address
            )
            .status == 0)
        let reply = try observer.receive(deadline: BlockingDeadline(timeout: .seconds(20)))
        let names = reply.parameters["notifications"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(names == ["x.sent"], "the refused post never reached the daemon")
    }
}

/// Waits until the daemon reports `count` connections running a stream (Watch or Observe).
func waitForStreams(_ count: Int, daemon: TestDaemon, timeout: Duration = .seconds(20)) throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        let json = try CLI.run(["clients", "--json"], address: daemon.address).json()
        let streams = (json["clients"]?.arrayValue ?? []).filter { $0["stream"]?.stringValue != nil }
        if streams.count >= count { return }
        guard ContinuousClock.now < deadline else { throw TestFailure("only \(streams.count) of \(count) streams") }
    }
}
