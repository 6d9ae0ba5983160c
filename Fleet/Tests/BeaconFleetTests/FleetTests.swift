import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// Two machines (each a real beacond with a real beacon-fleet) on a real three-member etcd cluster.
@Suite("beacon-fleet on a real etcd cluster", .serialized)
struct FleetTests {
    @Test(
        "writes converge on every machine in etcd's order; exactly one compare-and-set wins; origins name the machine")
    func convergence() async throws {
        let cluster = try EtcdCluster()
        let a = try Machine("kiosk-a", endpoints: cluster.endpoints)
        let b = try Machine("kiosk-b", endpoints: cluster.endpoints)
        let clientA = try await a.client()
        let clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        let seenOnB = try await ChangeLog.start(clientB)

        // Acknowledged means committed in etcd; the other machine sees the change, with its origin.
        try await clientA.set("fleet.message", to: "Closed for lunch")
        #expect(try cluster.stored("fleet.message") == "Closed for lunch")
        let change = try await seenOnB.wait(for: "fleet.message on kiosk-b") { $0.key == "fleet.message" }
        #expect(change.value == "Closed for lunch")
        #expect(change.origin?.machine == "kiosk-a")
        // The writer is this test process, on the other machine.
        #expect(change.origin?.pid == Int64(getpid()))
        // beaconctl's text on kiosk-b names the machine before the pid, which is no process of kiosk-b.
        let listed = try b.beaconctl(["list", "fleet"])
        #expect(listed.contains(try Regex("kiosk-a:\\S+\\[\(getpid())\\] uid")), "\(listed)")

        // Concurrent writers of one key: both machines end with etcd's last value.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (client, name) in [(clientA, "a"), (clientB, "b")] {
                group.addTask {
                    for index in 0..<40 { try await client.set("fleet.counter", to: .string("\(name)-\(index)")) }
                }
            }
            try await group.waitForAll()
        }
        let final = try #require(try cluster.stored("fleet.counter"))
        try await eventually("both machines hold etcd's last value \(final)") {
            let onA = try await clientA.get("fleet.counter").value
            let onB = try await clientB.get("fleet.counter").value
            return onA == final && onB == final
        }
        // Each machine saw the key's values in one order: kiosk-b's watcher saw kiosk-a's values in the order
        // kiosk-a wrote them.
        let fromA = seenOnB.all.filter { $0.key == "fleet.counter" && $0.origin?.machine == "kiosk-a" }
            .compactMap { $0.value?.stringValue }.compactMap { Int($0.dropFirst(2)) }
        #expect(fromA == fromA.sorted())

        // Compare-and-set across machines: each gives the version its own daemon shows; exactly one wins.
        try await clientA.set("fleet.owner", to: "nobody")
        try await eventually("kiosk-b holds fleet.owner") { (try? await clientB.get("fleet.owner").value) == "nobody" }
        for round in 0..<8 {
            let versionA = try await clientA.get("fleet.owner").version
            let versionB = try await clientB.get("fleet.owner").version
            async let wonA = attempt(clientA, "fleet.owner", "a\(round)", ifVersion: versionA)
            async let wonB = attempt(clientB, "fleet.owner", "b\(round)", ifVersion: versionB)
            let results = try await [wonA, wonB]
            #expect(results.filter { $0 }.count == 1, "round \(round): \(results)")
            let winner = results[0] ? "a\(round)" : "b\(round)"
            #expect(try cluster.stored("fleet.owner") == .string(winner))
            try await eventually("both machines hold \(winner)") {
                let onA = try await clientA.get("fleet.owner").value
                let onB = try await clientB.get("fleet.owner").value
                return onA == .string(winner) && onB == .string(winner)
            }
        }
        // Create-if-absent, fleet-wide.
        async let createdA = attempt(clientA, "fleet.leader", "a", ifVersion: 0)
        async let createdB = attempt(clientB, "fleet.leader", "b", ifVersion: 0)
        #expect(try await [createdA, createdB].filter { $0 }.count == 1)

        // An Unset reaches the other machine as a deletion.
        try await clientB.unset("fleet.message")
        try await eventually("fleet.message is gone on kiosk-a") {
            do throws(BeaconError) {
                _ = try await clientA.get("fleet.message")
                return false
            } catch {
                return error.code == .keyNotFound
            }
        }
        #expect(try cluster.stored("fleet.message") == nil)
        clientA.close()
        clientB.close()
    }

    /// Whether a compare-and-set succeeded; a VersionMismatch is a loss, any other error fails the test.
    func attempt(_ client: BeaconClient, _ key: String, _ value: String, ifVersion: Int64) async throws -> Bool {
        do {
            try await client.set(key, to: .string(value), ifVersion: ifVersion)
            return true
        } catch  where error.code == .versionMismatch {
            return false
        }
    }

    @Test("one member down keeps the fleet; without quorum reads are stale and say so, writes fail; it recovers")
    func quorum() async throws {
        let cluster = try EtcdCluster()
        let a = try Machine("a", endpoints: cluster.endpoints)
        let b = try Machine("b", endpoints: cluster.endpoints)
        let clientA = try await a.client()
        let clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        let seenOnB = try await ChangeLog.start(clientB)
        try await clientA.set("fleet.mode", to: "eco")

        try cluster.kill(1)
        try await clientA.set("fleet.mode", to: "normal")
        try await seenOnB.wait(for: "fleet.mode normal on b") { $0.key == "fleet.mode" && $0.value == "normal" }
        #expect(try await a.fleetState(clientA)?.isAvailable == true)

        try cluster.kill(2)
        try await eventually("a's fleet is unavailable") { try await a.fleetState(clientA)?.isAvailable == false }
        let state = try #require(try await a.fleetState(clientA))
        #expect(state.reason?.contains("etcd") == true)
        #expect((state.sinceUsec ?? 0) > 0)
        do {
            try await clientA.set("fleet.mode", to: "max")
            Issue.record("a write without quorum succeeded")
        } catch {
            #expect(error.code == .providerUnavailable)
        }
        let stale = try await clientA.get("fleet.mode")
        #expect(stale.value == "normal")
        #expect(stale.unavailable != nil)
        // Local keys are not affected.
        try await clientA.set("local.mode", to: "on")
        #expect(try await clientA.get("local.mode").unavailable == nil)
        // The CLI says so too.
        let status = try a.beaconctl(["status"])
        #expect(status.contains("fleet.** by beacon-fleet"))
        #expect(status.contains("unavailable since"))

        try cluster.restart(1)
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        try await clientA.set("fleet.mode", to: "max")
        try await seenOnB.wait(for: "fleet.mode max on b") { $0.key == "fleet.mode" && $0.value == "max" }
        #expect(try await clientA.get("fleet.mode").unavailable == nil)
        clientA.close()
        clientB.close()
    }

    @Test(
        "a machine's ephemeral keys vanish on the others when its beacond dies, and within the lease's TTL when the machine does"
    )
    func presence() async throws {
        let cluster = try EtcdCluster()
        let a = try Machine("a", endpoints: cluster.endpoints, leaseTTL: 2)
        let b = try Machine("b", endpoints: cluster.endpoints)
        let clientB = try await b.client()
        try await b.waitUntilAvailable(clientB)
        let seenOnB = try await ChangeLog.start(clientB)

        // beacond killed: beacon-fleet revokes the lease of its clients' keys.
        var clientA = try await a.client()
        try await a.waitUntilAvailable(clientA)
        try await clientA.set("fleet.hosts.a", to: true, ephemeral: true)
        try await seenOnB.wait(for: "fleet.hosts.a on b") { $0.key == "fleet.hosts.a" && !$0.deleted }
        a.daemon.kill()
        try await seenOnB.wait(for: "the deletion of fleet.hosts.a", within: .seconds(10)) {
            $0.key == "fleet.hosts.a" && $0.deleted
        }
        clientA.close()

        // The whole machine killed (beacond and beacon-fleet): the lease expires within its TTL.
        try a.daemon.start()
        clientA = try await a.client()
        try await a.waitUntilAvailable(clientA)
        seenOnB.clear()
        try await clientA.set("fleet.hosts.a", to: "back", ephemeral: true)
        try await seenOnB.wait(for: "fleet.hosts.a on b again") { $0.key == "fleet.hosts.a" && $0.value == "back" }
        let killed = ContinuousClock.now
        a.killFleet()
        a.daemon.kill()
        try await seenOnB.wait(for: "the deletion of fleet.hosts.a after the TTL", within: .seconds(2 + 8)) {
            $0.key == "fleet.hosts.a" && $0.deleted
        }
        #expect(ContinuousClock.now - killed < .seconds(2 + 8))
        #expect(try cluster.stored("fleet.hosts.a") == nil)
        clientA.close()
        clientB.close()
    }

    @Test(
        "a restarted beacon-fleet keeps the ephemeral keys of clients still connected; a key whose owner left meanwhile goes"
    )
    func presenceAcrossRestart() async throws {
        let cluster = try EtcdCluster()
        let ttl = 2
        let a = try Machine("a", endpoints: cluster.endpoints, leaseTTL: ttl)
        let b = try Machine("b", endpoints: cluster.endpoints, leaseTTL: ttl)
        let clientA = try await a.client()
        let clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        let seenOnB = try await ChangeLog.start(clientB)
        let owner = try await a.client()
        try await owner.set("fleet.hosts.a", to: "here", ephemeral: true)
        let leaving = try await a.client()
        try await leaving.set("fleet.hosts.gone", to: "here", ephemeral: true)
        try await seenOnB.wait(for: "fleet.hosts.gone on b") { $0.key == "fleet.hosts.gone" }

        a.killFleet()
        let killed = ContinuousClock.now
        // Its owner leaves while no beacon-fleet runs: beacond keeps the Unset for the next one.
        leaving.close()
        try a.startFleet()
        try await a.waitUntilAvailable(clientA)
        #expect(a.fleetLog.contains("kept the lease of this machine's ephemeral keys"))
        try await seenOnB.wait(for: "the deletion of fleet.hosts.gone") {
            $0.key == "fleet.hosts.gone" && $0.deleted
        }
        // The killed beacon-fleet's lease would have expired by now; the key of the owner still connected is there.
        try await Task.sleep(until: killed + .seconds(2 * ttl + 1))
        #expect(try cluster.stored("fleet.hosts.a") == "here")
        #expect(!seenOnB.all.contains { $0.key == "fleet.hosts.a" && $0.deleted })
        #expect(try await clientB.get("fleet.hosts.a").value == "here")
        owner.close()
        clientA.close()
        clientB.close()
    }

    @Test("a beacon-fleet away longer than the lease's TTL: the next one sets the keys of owners still connected again")
    func presenceRestored() async throws {
        let cluster = try EtcdCluster()
        let a = try Machine("a", endpoints: cluster.endpoints, leaseTTL: 2)
        let b = try Machine("b", endpoints: cluster.endpoints, leaseTTL: 2)
        let clientA = try await a.client()
        let clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        let seenOnB = try await ChangeLog.start(clientB)
        let owner = try await a.client()
        try await owner.set("fleet.hosts.a", to: "here", ephemeral: true)
        try await seenOnB.wait(for: "fleet.hosts.a on b") { $0.key == "fleet.hosts.a" }
        a.killFleet()
        try await seenOnB.wait(for: "the deletion of fleet.hosts.a when the lease expired") {
            $0.key == "fleet.hosts.a" && $0.deleted
        }
        seenOnB.clear()
        try a.startFleet()
        let back = try await seenOnB.wait(for: "fleet.hosts.a set again") { $0.key == "fleet.hosts.a" && !$0.deleted }
        #expect(back.value == "here")
        #expect(try cluster.stored("fleet.hosts.a") == "here")
        owner.close()
        try await seenOnB.wait(for: "the deletion of fleet.hosts.a after its owner left") {
            $0.key == "fleet.hosts.a" && $0.deleted
        }
        clientA.close()
        clientB.close()
    }

    @Test("a machine cut off while etcd compacts resyncs: its watchers see exactly the keys that changed")
    func compactionResync() async throws {
        let cluster = try EtcdCluster()
        let a = try Machine("a", endpoints: cluster.endpoints)
        // b reaches etcd through member 3 only: killing it cuts b off while the cluster keeps its quorum.
        let b = try Machine("b", endpoints: try cluster.endpoint(3))
        let clientA = try await a.client()
        let clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        for key in ["fleet.x", "fleet.y", "fleet.w"] { try await clientA.set(key, to: "before") }
        try await eventually("b holds the first values") {
            (try? await clientB.get("fleet.w").value) == "before"
        }
        let seenOnB = try await ChangeLog.start(clientB)

        try cluster.kill(3)
        try await eventually("b's fleet is unavailable") { try await b.fleetState(clientB)?.isAvailable == false }
        try await clientA.set("fleet.x", to: "after")
        try await clientA.unset("fleet.y")
        try await clientA.set("fleet.z", to: "new")
        for index in 0..<5 { try await clientA.set("fleet.x", to: .int(Int64(index))) }
        try await clientA.set("fleet.x", to: "after")
        try cluster.compact()
        try cluster.restart(3)
        try await b.waitUntilAvailable(clientB)
        try await eventually("b holds fleet.z") { (try? await clientB.get("fleet.z").value) == "new" }
        try await eventually("b lost fleet.y") { (try? await clientB.get("fleet.y")) == nil }
        #expect(try await clientB.get("fleet.x").value == "after")
        #expect(b.fleetLog.contains("compacted"))
        let changed = Set(seenOnB.all.filter { $0.key.hasPrefix("fleet.") }.map(\.key))
        #expect(changed == ["fleet.x", "fleet.y", "fleet.z"])
        let xChanges = seenOnB.all.filter { $0.key == "fleet.x" }
        #expect(xChanges.count == 1)
        clientA.close()
        clientB.close()
    }

    @Test(
        "a subtree larger than one message, than gRPC's default response and than one page of a Range reaches a machine that joins later"
    )
    func largeSubtree() async throws {
        let cluster = try EtcdCluster()
        let a = try Machine("a", endpoints: cluster.endpoints)
        let clientA = try await a.client()
        try await a.waitUntilAvailable(clientA)
        // 80 values of 60 kB: 4.8 MB, more than a Publish (1 MiB by default) or a gRPC response (4 MiB by default)
        // can hold.
        let filler = String(repeating: "x", count: 60_000)
        func value(_ index: Int) -> JSONValue { .string("\(index):" + filler) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for index in stride(from: worker, to: 80, by: 4) {
                        try await clientA.set("fleet.big.item\(index)", to: value(index))
                    }
                }
            }
            // And 220 small ones: 300 keys are read in two pages of a Range.
            group.addTask {
                for index in 0..<220 { try await clientA.set("fleet.small.item\(index)", to: .int(Int64(index))) }
            }
            try await group.waitForAll()
        }

        let b = try Machine("b", endpoints: cluster.endpoints)
        let clientB = try await b.client()
        try await b.waitUntilAvailable(clientB)
        for index in 0..<80 { #expect(try await clientB.get("fleet.big.item\(index)").value == value(index)) }
        let small = try await clientB.list(prefix: "fleet.small").properties
        #expect(small.count == 220)
        #expect(small.allSatisfy { "fleet.small.item\($0.value.intValue ?? -1)" == $0.key })
        #expect(b.fleetLog.contains("keys=300"))

        // While b's beacon-fleet is away, a key goes: the resync in parts deletes it, and only it.
        #expect(b.terminateFleet() == 0)
        try await clientA.unset("fleet.big.item41")
        try b.startFleet()
        try await b.waitUntilAvailable(clientB)
        await #expect(throws: BeaconError.self) { _ = try await clientB.get("fleet.big.item41") }
        for index in [0, 40, 42, 79] {
            #expect(try await clientB.get("fleet.big.item\(index)").value == value(index))
        }
        #expect(b.fleetLog.contains("keys=299"))
        clientA.close()
        clientB.close()
    }

    @Test(
        "over TLS with client certificates and etcd's authentication, as a user allowed only /beacon/; after etcd restarts and forgets its tokens, both machines log in again"
    )
    func secured() async throws {
        let cluster = try EtcdCluster(secure: true)
        #expect(cluster.endpoints.hasPrefix("https://"))
        let settings = [
            "BEACON_FLEET_TLS_CA_FILE": cluster.tls + "/ca.pem",
            "BEACON_FLEET_TLS_CERT_FILE": cluster.tls + "/client.pem",
            "BEACON_FLEET_TLS_KEY_FILE": cluster.tls + "/client-key.pem", "BEACON_FLEET_USER": "kiosk",
            "BEACON_FLEET_PASSWORD_FILE": cluster.tls + "/kiosk.password",
        ]
        let a = try Machine("a", endpoints: cluster.endpoints, settings: settings)
        let b = try Machine("b", endpoints: cluster.endpoints, settings: settings)
        let clientA = try await a.client()
        let clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        let seenOnB = try await ChangeLog.start(clientB)
        try await clientA.set("fleet.secure", to: "yes")
        _ = try await seenOnB.wait(for: "fleet.secure on b") { $0.key == "fleet.secure" && $0.value == "yes" }
        // A lease, as the same user.
        try await clientA.set("fleet.present.a", to: true, ephemeral: true)
        _ = try await seenOnB.wait(for: "fleet.present.a on b") { $0.key == "fleet.present.a" && $0.value == true }

        // Every member restarted: etcd's simple tokens are gone, and every stream ends.
        try cluster.stop()
        for member in 1...3 { try cluster.restart(member) }
        try await eventually("a writes again") { (try? await clientA.set("fleet.secure", to: "again")) != nil }
        _ = try await seenOnB.wait(for: "the write after the restart on b") {
            $0.key == "fleet.secure" && $0.value == "again"
        }
        try await clientB.set("fleet.secure", to: "from b")
        try await eventually("a sees b's write") { (try? await clientA.get("fleet.secure").value) == "from b" }
        // The lease is kept alive again after the restart, with a new token, and its key is still there.
        try await eventually("a's lease to be kept alive again") { a.fleetLog.contains("kept alive again") }
        #expect(try await clientB.get("fleet.present.a").value == true)
        #expect(!a.fleetLog.contains("expired"))
        clientA.close()
        clientB.close()
    }

    @Test("after a restart of everything, every machine holds the same state")
    func fullRestart() async throws {
        let cluster = try EtcdCluster()
        let a = try Machine("a", endpoints: cluster.endpoints)
        let b = try Machine("b", endpoints: cluster.endpoints)
        var clientA = try await a.client()
        var clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        for index in 0..<10 { try await clientA.set("fleet.item\(index)", to: .int(Int64(index))) }
        try await clientB.set("fleet.mode", to: "eco")
        try await eventually("a holds fleet.mode") { (try? await clientA.get("fleet.mode").value) == "eco" }
        try await eventually("b holds fleet.item9") { (try? await clientB.get("fleet.item9").value) == 9 }
        let before = try await clientA.list(prefix: "fleet").properties.map { [$0.key: $0.value] }
        #expect(try await clientA.get("fleet.mode").origin.machine == b.name)
        clientA.close()
        clientB.close()

        for machine in [a, b] {
            // beacon-fleet stops on SIGTERM, its watch running, and exits cleanly.
            #expect(machine.terminateFleet() == 0)
            #expect(machine.daemon.terminate() == 0)
        }
        try cluster.stop()
        try cluster.restart(1)
        try cluster.restart(2)
        try cluster.restart(3)
        for machine in [a, b] {
            try machine.daemon.start()
            try machine.startFleet()
        }
        clientA = try await a.client()
        clientB = try await b.client()
        try await a.waitUntilAvailable(clientA)
        try await b.waitUntilAvailable(clientB)
        let afterA = try await clientA.list(prefix: "fleet").properties.map { [$0.key: $0.value] }
        let afterB = try await clientB.list(prefix: "fleet").properties.map { [$0.key: $0.value] }
        #expect(afterA == before)
        #expect(afterB == before)
        // The origin, machine included, came back from a's store: the resync found the same value and changed nothing.
        #expect(try await clientA.get("fleet.mode").origin.machine == b.name)
        try await clientB.set("fleet.mode", to: "normal")
        try await eventually("a sees the write after the restart") {
            (try? await clientA.get("fleet.mode").value) == "normal"
        }
        clientA.close()
        clientB.close()
    }

    @Test("beacon-fleet: a misspelt flag is an error with a hint; --help and --version answer")
    func flags() throws {
        let path = try BuiltProducts.path("beacon-fleet", override: "BEACON_FLEET_PATH")
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = ["PATH": "/usr/bin:/bin", "HOME": directory, "XDG_CONFIG_HOME": directory]
        let misspelt = try ChildProcess(
            path, ["--fleet-prefixs", "fleet"], environment: environment, error: .capture)
        let message = String(decoding: misspelt.readError(), as: UTF8.self)
        #expect(misspelt.wait() == 2)
        #expect(message.contains("--fleet-prefixs: no such flag; did you mean --fleet-prefixes?"), "\(message)")
        let version = try ChildProcess(path, ["--version"], environment: environment, output: .capture)
        #expect(String(decoding: version.readOutput(), as: UTF8.self) == "beacon-fleet \(BeaconVersion.current)\n")
        #expect(version.wait() == 0)
        let help = try ChildProcess(path, ["--help"], environment: environment, output: .capture)
        #expect(String(decoding: help.readOutput(), as: UTF8.self).hasPrefix("usage: beacon-fleet"))
        #expect(help.wait() == 0)
    }
}
