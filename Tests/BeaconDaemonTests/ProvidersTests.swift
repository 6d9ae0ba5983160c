import BeaconProtocol
import BeaconTestSupport
import Testing

@Suite("io.beacon.Providers")
struct ProvidersTests {
    /// Registers `client` as the provider of `patterns`; returns its provider number.
    func register(
        _ client: VarlinkTestClient, _ patterns: [JSONValue], unavailable: String? = nil
    ) throws -> Int64 {
        var parameters: [String: JSONValue] = ["patterns": .array(patterns)]
        if let unavailable { parameters["unavailable"] = .string(unavailable) }
        let reply = try client.call("io.beacon.Providers.Provide", parameters, more: true)
        #expect(reply.error == nil)
        #expect(reply["requests"]?.elements.isEmpty == true)
        return try #require(reply["provider"]?.intValue)
    }

    /// The next request the provider receives.
    func nextRequest(_ provider: VarlinkTestClient) throws -> [String: JSONValue] {
        let reply = try provider.receive()
        #expect(reply.continues)
        let requests = reply["requests"]?.elements ?? []
        #expect(requests.count == 1)
        return try #require(requests.first?.members)
    }

    @Test("a provider decides the Sets and Unsets of its subtree; the caller waits for the answer, in call order")
    func forwardedWrites() throws {
        let daemon = try TestDaemon()
        let providerStream = try daemon.connect()
        let provider = try daemon.connect()
        let caller = try daemon.connect()
        let number = try register(providerStream, ["fleet.**"])

        // Keys outside the subtree are not forwarded.
        try caller.set("local.mode", "on")

        // A Set of a provided key, with a Get pipelined behind it.
        caller.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        caller.send("io.beacon.Properties.Get", ["key": "local.mode"])
        let request = try nextRequest(providerStream)
        #expect(request["method"] == "Set")
        #expect(request["key"] == "fleet.mode")
        #expect(request["value"] == "eco")
        #expect(request["answered"] == true)
        #expect(request["ifProviderVersion"] == nil)
        #expect(request["origin"]?["pid"]?.intValue == testPID)
        let id = try #require(request["id"]?.intValue)
        let answered = try provider.parameters(
            "io.beacon.Providers.Answer",
            [
                "provider": .int(number), "id": .int(id),
                "change": [
                    "key": "fleet.mode", "value": "eco", "providerVersion": 7,
                    "origin": ["uid": 1000, "pid": 42, "command": "settings", "machine": "kiosk-2"],
                ],
            ])
        #expect(answered.isEmpty)
        // The Set's reply comes first, then the Get's.
        let setReply = try caller.receive()
        let version = try #require(setReply["version"]?.intValue)
        #expect(try caller.receive()["property"]?["value"] == "on")
        let property = try caller.parameters("io.beacon.Properties.Get", ["key": "fleet.mode"])["property"]
        #expect(property?["value"] == "eco")
        #expect(property?["version"]?.intValue == version)
        #expect(property?["origin"]?["machine"] == "kiosk-2")
        #expect(property?["origin"]?["pid"]?.intValue == 42)

        // Compare-and-set: the daemon checks its own version, the provider gets its version of the value.
        let stale = try caller.call(
            "io.beacon.Properties.Set", ["key": "fleet.mode", "value": "max", "ifVersion": .int(version + 100)])
        #expect(stale.error == "io.beacon.Properties.VersionMismatch")
        caller.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "max", "ifVersion": .int(version)])
        let guarded = try nextRequest(providerStream)
        #expect(guarded["ifProviderVersion"]?.intValue == 7)
        _ = try provider.parameters(
            "io.beacon.Providers.Answer",
            [
                "provider": .int(number), "id": guarded["id"] ?? .null,
                "error": "io.beacon.Properties.VersionMismatch",
                "errorParameters": ["key": "fleet.mode", "expected": .int(version), "actual": .int(version)],
            ])
        let lost = try caller.receive()
        #expect(lost.error == "io.beacon.Properties.VersionMismatch")

        // An Unset is forwarded as well.
        caller.send("io.beacon.Properties.Unset", ["key": "fleet.mode"])
        let unset = try nextRequest(providerStream)
        #expect(unset["method"] == "Unset")
        _ = try provider.parameters(
            "io.beacon.Providers.Answer",
            [
                "provider": .int(number), "id": unset["id"] ?? .null,
                "change": ["key": "fleet.mode", "providerVersion": 9],
            ])
        #expect((try caller.receive()["version"]?.intValue ?? 0) > version)
        let gone = try caller.call("io.beacon.Properties.Get", ["key": "fleet.mode"])
        #expect(gone.error == "io.beacon.Properties.KeyNotFound")
    }

    @Test("a caller that hangs up while its Set waits for the provider is closed at once, not when the answer comes")
    func callerHangsUpWhileWaiting() throws {
        let daemon = try TestDaemon()
        let providerStream = try daemon.connect()
        _ = try register(providerStream, ["fleet.**"])
        let observer = try daemon.connect()
        let caller = try daemon.connect()
        // The Set waits for the provider; the connection is not read from meanwhile, so the Get stays unread.
        caller.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        caller.send("io.beacon.Properties.Get", ["key": "fleet.mode"])
        _ = try nextRequest(providerStream)
        caller.close()
        // The daemon is told of the hang-up although it does not read the connection (level-triggered, it would
        // otherwise be told again and again, and keep the connection until the provider answers).
        try waitUntil("the caller's connection is closed", within: .seconds(10)) {
            (try observer.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:])["clients"] == 2
        }
    }

    @Test("published changes: older ones are ignored, equal values change nothing, resync deletes the rest")
    func publishing() throws {
        let daemon = try TestDaemon()
        let providerStream = try daemon.connect()
        let provider = try daemon.connect()
        let watcher = try daemon.connect()
        let number = try register(providerStream, ["fleet.**"])
        let first = try watcher.call("io.beacon.Properties.Watch", ["patterns": ["fleet.**"]], more: true)
        #expect(first.error == nil)

        func publish(
            _ changes: [JSONValue], resync: Bool = false, more: Bool = false, version: Int64? = nil
        ) throws -> Int64 {
            var parameters: [String: JSONValue] = ["provider": .int(number), "changes": .array(changes)]
            if resync { parameters["resync"] = true }
            if more { parameters["more"] = true }
            if let version { parameters["providerVersion"] = .int(version) }
            return try #require(try provider.parameters("io.beacon.Providers.Publish", parameters)["version"]?.intValue)
        }
        _ = try publish([
            ["key": "fleet.a", "value": 1, "providerVersion": 10],
            ["key": "fleet.b", "value": 2, "providerVersion": 11],
        ])
        var seen = try watcher.receive()["changes"]?.elements.compactMap { $0["key"]?.stringValue } ?? []
        #expect(seen == ["fleet.a", "fleet.b"])
        // Older than fleet.a's last change, and the same value as fleet.b's: nothing to deliver. Then a resync
        // that keeps fleet.b only: fleet.a's deletion is the one change watchers see.
        _ = try publish([
            ["key": "fleet.a", "value": 5, "providerVersion": 3],
            ["key": "fleet.b", "value": 2, "providerVersion": 12],
        ])
        _ = try publish([["key": "fleet.b", "value": 2, "providerVersion": 12]], resync: true)
        let deletion = try watcher.receive()["changes"]?.elements ?? []
        seen = deletion.compactMap { $0["key"]?.stringValue }
        #expect(seen == ["fleet.a"])
        #expect(deletion.first?["deleted"] == true)
        #expect(try provider.parameters("io.beacon.Properties.Get", ["key": "fleet.b"])["property"]?["value"] == 2)

        // A resync in two parts: nothing is deleted after the first; after the last, the key neither part named.
        _ = try publish(
            [
                ["key": "fleet.c", "value": 3, "providerVersion": 20],
                ["key": "fleet.d", "value": 4, "providerVersion": 21],
            ],
            resync: true, more: true)
        seen = try watcher.receive()["changes"]?.elements.compactMap { $0["key"]?.stringValue } ?? []
        #expect(seen == ["fleet.c", "fleet.d"])
        #expect(try provider.parameters("io.beacon.Properties.Get", ["key": "fleet.b"])["property"]?["value"] == 2)
        _ = try publish([["key": "fleet.e", "value": 5, "providerVersion": 22]], resync: true)
        let last = try watcher.receive()["changes"]?.elements ?? []
        #expect(last.compactMap { $0["key"]?.stringValue } == ["fleet.e", "fleet.b"])
        #expect(last.last?["deleted"] == true)
        let listed = try provider.parameters("io.beacon.Properties.List", ["prefix": "fleet"])["properties"]
        #expect(listed?.elements.compactMap { $0["key"]?.stringValue }.sorted() == ["fleet.c", "fleet.d", "fleet.e"])
        // A resync that reflects version 30 and does not name fleet.c: it goes, and a change of it no newer than 30
        // (the answer to a write applied before the resync) does not bring it back; a newer one does.
        _ = try publish(
            [
                ["key": "fleet.d", "value": 4, "providerVersion": 21],
                ["key": "fleet.e", "value": 5, "providerVersion": 22],
            ],
            resync: true, version: 30)
        #expect(try watcher.receive()["changes"]?.elements.first?["deleted"] == true)
        _ = try publish([["key": "fleet.c", "value": 33, "providerVersion": 25]])
        _ = try publish([["key": "fleet.c", "value": 34, "providerVersion": 31]])
        let revived = try watcher.receive()["changes"]?.elements ?? []
        #expect(revived.compactMap { $0["value"] } == [34])
        let misplaced = try provider.call(
            "io.beacon.Providers.Publish", ["provider": .int(number), "changes": [], "providerVersion": 5])
        #expect(misplaced.error == "org.varlink.service.InvalidParameter")
        let stray = try provider.call(
            "io.beacon.Providers.Publish", ["provider": .int(number), "changes": [], "more": true])
        #expect(stray.error == "org.varlink.service.InvalidParameter")

        let outside = try provider.call(
            "io.beacon.Providers.Publish",
            ["provider": .int(number), "changes": [["key": "local.x", "value": 1, "providerVersion": 1]]])
        #expect(outside.error == "io.beacon.Providers.NotProvider")
        let unknown = try provider.call("io.beacon.Providers.Publish", ["provider": 999_999, "changes": []])
        #expect(unknown.error == "io.beacon.Providers.NotProvider")
    }

    @Test(
        "bad registrations are refused; the writes a provider had not answered when it went go to the next one, unchanged"
    )
    func registrationAndLoss() throws {
        let daemon = try TestDaemon()
        let providerStream = try daemon.connect()
        let caller = try daemon.connect()
        let presence = try daemon.connect()
        let number = try register(providerStream, ["fleet.**"])

        let other = try daemon.connect()
        let overlapping = try other.call(
            "io.beacon.Providers.Provide", ["patterns": ["fleet.kiosk.**"]], more: true)
        #expect(overlapping.error == "io.beacon.Providers.ProviderConflict")
        let wildcard = try daemon.connect().call(
            "io.beacon.Providers.Provide", ["patterns": ["fleet.*"]], more: true)
        #expect(wildcard.error == "io.beacon.Providers.InvalidPattern")
        let reserved = try daemon.connect().call(
            "io.beacon.Providers.Provide", ["patterns": ["daemon.**"]], more: true)
        #expect(reserved.error == "io.beacon.Properties.ReadOnly")

        // An ephemeral Set: when its caller closes, the provider is told to unset the key, with no caller.
        presence.send("io.beacon.Properties.Set", ["key": "fleet.hosts.a", "value": true, "ephemeral": true])
        let set = try nextRequest(providerStream)
        #expect(set["ephemeral"] == true)
        let provider = try daemon.connect()
        _ = try provider.parameters(
            "io.beacon.Providers.Answer",
            [
                "provider": .int(number), "id": set["id"] ?? .null,
                "change": ["key": "fleet.hosts.a", "value": true, "providerVersion": 4],
            ])
        #expect(try presence.receive()["version"] != nil)
        presence.close()
        let cleanup = try nextRequest(providerStream)
        #expect(cleanup["method"] == "Unset")
        #expect(cleanup["key"] == "fleet.hosts.a")
        #expect(cleanup["answered"] == false)

        // A caller waiting when the provider goes: the write waits for the next provider, which gets it
        // unchanged, under the same write name, and answers it. A call made meanwhile waits too, behind it.
        caller.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        let first = try nextRequest(providerStream)
        let write = try #require(first["write"]?.stringValue)
        providerStream.close()
        let meanwhile = try daemon.connect()
        meanwhile.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "max"])
        // The values stay readable.
        #expect(
            try daemon.connect().parameters("io.beacon.Properties.Get", ["key": "fleet.hosts.a"])["property"] != nil)
        let again = try daemon.connect()
        let second = try register(again, ["fleet.**"])
        // First the cleanup the first provider never answered, then the Set, in the order they were sent.
        let cleanupAgain = try nextRequest(again)
        #expect(cleanupAgain["key"] == "fleet.hosts.a")
        #expect(cleanupAgain["write"] == cleanup["write"])
        let resent = try nextRequest(again)
        #expect(resent["write"]?.stringValue == write)
        #expect(resent["key"] == "fleet.mode")
        #expect(resent["value"] == "eco")
        _ = try provider.parameters(
            "io.beacon.Providers.Answer",
            [
                "provider": .int(second), "id": resent["id"] ?? .null,
                "change": ["key": "fleet.mode", "value": "eco", "providerVersion": 9],
            ])
        #expect(try caller.receive()["version"] != nil)
        let behind = try nextRequest(again)
        #expect(behind["value"] == "max")
        #expect(behind["write"]?.stringValue != write)
    }

    @Test(
        "a write waits for its provider up to fleet.requestTimeoutMs: one never sent is refused, one sent to a provider that went is of unknown outcome"
    )
    func waitingForProvider() throws {
        let daemon = try TestDaemon(arguments: ["--fleet-prefixes", "fleet", "--fleet-request-timeout-ms", "300"])
        let caller = try daemon.connect()
        let early = try caller.call("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        #expect(early.error == "io.beacon.Providers.ProviderUnavailable")
        #expect(early["reason"]?.stringValue?.contains("not applied") == true)

        // A provider that registers while a write waits gets it.
        caller.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        let providerStream = try daemon.connect()
        let provider = try daemon.connect()
        let number = try register(providerStream, ["fleet.**"])
        let request = try nextRequest(providerStream)
        #expect(request["value"] == "eco")
        _ = try provider.parameters(
            "io.beacon.Providers.Answer",
            [
                "provider": .int(number), "id": request["id"] ?? .null,
                "change": ["key": "fleet.mode", "value": "eco", "providerVersion": 3],
            ])
        #expect(try caller.receive()["version"] != nil)

        // Sent, then the provider went, and none came after it.
        caller.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "max"])
        _ = try nextRequest(providerStream)
        providerStream.close()
        let unknown = try caller.receive()
        #expect(unknown.error == "io.beacon.Providers.OutcomeUnknown")
        #expect(unknown["key"] == "fleet.mode")
        let later = try caller.call("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        #expect(later.error == "io.beacon.Providers.ProviderUnavailable")
        #expect(later["reason"]?.stringValue?.contains("disconnected") == true)
    }

    @Test(
        "configured subtrees refuse writes until their provider registers; availability shows in Status and Get; a VersionMismatch answer carries this daemon's versions"
    )
    func availability() throws {
        let daemon = try TestDaemon(arguments: ["--fleet-prefixes", "fleet", "--fleet-request-timeout-ms", "200"])
        let caller = try daemon.connect()
        func providerState() throws -> [String: JSONValue]? {
            let status = try caller.parameters("io.beacon.Daemon.Status", [:])["status"]
            let states = status?["providers"]?.elements ?? []
            #expect(states.count == 1)
            return states.first?.members
        }
        let early = try caller.call("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        #expect(early.error == "io.beacon.Providers.ProviderUnavailable")
        #expect(early["reason"]?.stringValue?.contains("fleet.prefixes") == true)
        #expect(try providerState()?["available"] == false)
        #expect(try providerState()?["subtrees"] == ["fleet.**"])
        let orphanedSince = try #require(try providerState()?["sinceUsec"]?.intValue)
        try caller.set("local.mode", "on")

        // A provider that must read its source first registers unavailable, and stays so until it says otherwise.
        let providerStream = try daemon.connect()
        let provider = try daemon.connect()
        let number = try register(providerStream, ["fleet.**"], unavailable: "reading the source")
        let reading = try providerState()
        #expect(reading?["available"] == false)
        #expect(reading?["reason"] == "reading the source")
        #expect(reading?["sinceUsec"]?.intValue == orphanedSince)
        let meanwhile = try caller.call("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "eco"])
        #expect(meanwhile.error == "io.beacon.Providers.ProviderUnavailable")
        #expect(meanwhile["reason"]?.stringValue?.hasPrefix("reading the source") == true)
        _ = try provider.parameters(
            "io.beacon.Providers.Publish",
            ["provider": .int(number), "changes": [["key": "fleet.mode", "value": "eco", "providerVersion": 5]]])
        _ = try provider.parameters("io.beacon.Providers.SetAvailable", ["provider": .int(number), "available": true])
        #expect(try providerState()?["available"] == true)
        #expect(try providerState()?["provider"]?.intValue == number)
        let fresh = try caller.parameters("io.beacon.Properties.Get", ["key": "fleet.mode"])
        #expect(fresh["unavailable"] == nil)

        // The provider loses its backend: writes fail at once, reads say that they may be stale.
        _ = try provider.parameters(
            "io.beacon.Providers.SetAvailable",
            ["provider": .int(number), "available": false, "reason": "no etcd quorum"])
        let refused = try caller.call("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "max"])
        #expect(refused.error == "io.beacon.Providers.ProviderUnavailable")
        #expect(refused["reason"] == "no etcd quorum")
        let stale = try caller.parameters("io.beacon.Properties.Get", ["key": "fleet.mode"])
        #expect(stale["property"]?["value"] == "eco")
        #expect(stale["unavailable"]?["reason"] == "no etcd quorum")
        #expect((stale["unavailable"]?["sinceUsec"]?.intValue ?? 0) > 0)
        #expect(try caller.parameters("io.beacon.Properties.Get", ["key": "local.mode"])["unavailable"] == nil)
        let down = try providerState()
        #expect(down?["available"] == false)
        #expect(down?["reason"] == "no etcd quorum")
        #expect(down?["sinceUsec"]?.intValue == stale["unavailable"]?["sinceUsec"]?.intValue)
        let missing = try provider.call("io.beacon.Providers.SetAvailable", ["provider": .int(number)])
        #expect(missing.error == "org.varlink.service.InvalidParameter")

        _ = try provider.parameters("io.beacon.Providers.SetAvailable", ["provider": .int(number), "available": true])
        #expect(try caller.parameters("io.beacon.Properties.Get", ["key": "fleet.mode"])["unavailable"] == nil)
        #expect(try providerState()?["available"] == true)

        // The provider's compare failed: the caller learns the version it gave and the key's version here.
        let version = try #require(fresh["property"]?["version"]?.intValue)
        caller.send("io.beacon.Properties.Set", ["key": "fleet.mode", "value": "max", "ifVersion": .int(version)])
        let guarded = try nextRequest(providerStream)
        #expect(guarded["ifProviderVersion"]?.intValue == 5)
        _ = try provider.parameters(
            "io.beacon.Providers.Answer",
            ["provider": .int(number), "id": guarded["id"] ?? .null, "error": "io.beacon.Properties.VersionMismatch"])
        let lost = try caller.receive()
        #expect(lost.error == "io.beacon.Properties.VersionMismatch")
        #expect(lost["expected"]?.intValue == version)
        #expect(lost["actual"]?.intValue == version)
    }
}
