import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// watch, monitor, wait and set --ephemeral: long-running commands against the real daemon.
@Suite struct StreamCommandTests {
    @Test func watchPrintsInitialValuesThenChangesAsJSONLines() throws {
        let daemon = try TestDaemon()
        #expect(try CLI.run(["set", "power.level", "70"], address: daemon.address).status == 0)
        let watch = try CLIProcess(
            ["watch", "power.**", "--initial", "--old", "--json", "--limit", "3"], address: daemon.address)
        // The initial value arrives in the first reply: the subscription is in place once it is printed.
        let initial = try JSONValue(parsing: try watch.nextLine())
        #expect(initial["key"] == "power.level")
        #expect(initial["value"] == 70)
        #expect(initial["deleted"] == false)

        #expect(try CLI.run(["set", "power.level", "80"], address: daemon.address).status == 0)
        #expect(try CLI.run(["set", "other.key", "1"], address: daemon.address).status == 0)
        #expect(try CLI.run(["unset", "power.level"], address: daemon.address).status == 0)

        let changed = try JSONValue(parsing: try watch.nextLine())
        #expect(changed["value"] == 80)
        #expect(changed["old"] == 70)
        #expect(changed["origin"]?["command"] == "beaconctl")
        let deleted = try JSONValue(parsing: try watch.nextLine())
        #expect(deleted["key"] == "power.level")
        #expect(deleted["deleted"] == true)
        #expect(deleted["value"] == nil)
        #expect((deleted["version"]?.intValue ?? 0) > (changed["version"]?.intValue ?? 0))

        let end = try watch.finish()
        #expect(end.status == 0)
        #expect(end.stdout.isEmpty)
    }

    @Test func watchTextAndSinceReplay() throws {
        let daemon = try TestDaemon()
        let first = try CLI.run(["set", "a.one", "1", "--json"], address: daemon.address)
        let version = try #require(try first.json()["version"]?.intValue)
        #expect(try CLI.run(["set", "a.two", "two"], address: daemon.address).status == 0)
        #expect(try CLI.run(["unset", "a.one"], address: daemon.address).status == 0)

        let replay = try CLI.run(["watch", "a.*", "--since", "\(version)", "--limit", "2"], address: daemon.address)
        #expect(replay.status == 0)
        #expect(replay.lines.count == 2)
        #expect(replay.lines[0].hasPrefix("v\(version + 1)  a.two = \"two\"  by beaconctl["))
        #expect(replay.lines[1].hasPrefix("v\(version + 2)  a.one deleted"))
    }

    @Test func watchRejectsBadPatterns() throws {
        let daemon = try TestDaemon()
        let result = try CLI.run(["watch", "a..b"], address: daemon.address)
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("Error: io.beacon.Properties.InvalidPattern: \"a..b\""))
    }

    @Test func monitorShowsChangesAndNotificationsWithSenders() throws {
        let daemon = try TestDaemon()
        let monitor = try CLIProcess(["monitor", "--json", "--limit", "2"], address: daemon.address)
        try waitForStreams(2, daemon: daemon)

        #expect(try CLI.run(["post", "app.saved", "{\"doc\":\"a.txt\"}"], address: daemon.address).status == 0)
        let notification = try JSONValue(parsing: try monitor.nextLine())
        #expect(notification["type"] == "notification")
        #expect(notification["name"] == "app.saved")
        #expect(notification["userInfo"] == ["doc": "a.txt"])
        #expect(notification["sequence"]?.intValue != nil)
        #expect(notification["origin"]?["command"] == "beaconctl")

        #expect(try CLI.run(["set", "app.state", "open"], address: daemon.address).status == 0)
        let change = try JSONValue(parsing: try monitor.nextLine())
        #expect(change["type"] == "change")
        #expect(change["key"] == "app.state")
        #expect(change["value"] == "open")
        #expect(change["origin"]?["pid"]?.intValue != nil)
        #expect(try monitor.finish().status == 0)
    }

    @Test func monitorEndsWithStatusFiveWhenTheDaemonGoesAway() throws {
        let daemon = try TestDaemon()
        let monitor = try CLIProcess(["monitor"], address: daemon.address)
        try waitForStreams(2, daemon: daemon)
        daemon.kill()
        let result = try monitor.finish()
        #expect(result.status == 5)
        #expect(result.stderr.hasPrefix("Error: \(daemon.address): the daemon closed the connection"))
    }

    @Test func postPrintsTheSequence() throws {
        let daemon = try TestDaemon()
        let first = try CLI.run(["post", "app.tick", "--json"], address: daemon.address)
        let second = try CLI.run(["post", "app.tick", "plain text", "--json"], address: daemon.address)
        let one = try #require(try first.json()["sequence"]?.intValue)
        #expect(try second.json()["sequence"]?.intValue == one + 1)
        let reserved = try CLI.run(["post", "lifecycle.didWake"], address: daemon.address)
        #expect(reserved.status == 1)
        #expect(reserved.stderr.hasPrefix("Error: io.beacon.Notifications.InvalidName: "))
    }

    @Test func waitReturnsAtOnceForAPropertyThatIsAlreadySet() throws {
        let daemon = try TestDaemon()
        #expect(try CLI.run(["set", "app.ready", "true"], address: daemon.address).status == 0)
        let plain = try CLI.run(["wait", "app.ready", "--timeout", "10"], address: daemon.address)
        #expect(plain.status == 0)
        #expect(plain.stdout.hasPrefix("change        v1  app.ready = true"))
        let withValue = try CLI.run(["wait", "app.ready=true", "--json"], address: daemon.address)
        #expect(withValue.status == 0)
        #expect(try withValue.json()["type"] == "change")
    }

    @Test func waitTimesOutWithStatusFour() throws {
        let daemon = try TestDaemon()
        #expect(try CLI.run(["set", "app.ready", "false"], address: daemon.address).status == 0)
        for target in ["app.ready=true", "never.posted"] {
            let result = try CLI.run(["wait", target, "--timeout", "0.3"], address: daemon.address)
            #expect(result.status == 4, "\(target)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr == "Error: timed out after 0.3s waiting for \(target)\n")
        }
    }

    @Test func waitSeesANotificationAndAValueChange() throws {
        let daemon = try TestDaemon()
        let notification = try CLIProcess(["wait", "app.loaded", "--json"], address: daemon.address)
        let value = try CLIProcess(["wait", "app.mode=\"dark\""], address: daemon.address)
        try waitForStreams(4, daemon: daemon)

        #expect(try CLI.run(["post", "app.other"], address: daemon.address).status == 0)
        #expect(try CLI.run(["set", "app.mode", "light"], address: daemon.address).status == 0)
        #expect(try CLI.run(["post", "app.loaded", "{\"ms\":12}"], address: daemon.address).status == 0)
        let posted = try notification.finish()
        #expect(posted.status == 0)
        let event = try posted.json()
        #expect(event["type"] == "notification")
        #expect(event["name"] == "app.loaded")
        #expect(event["userInfo"] == ["ms": 12])
        #expect(value.isRunning)

        #expect(try CLI.run(["set", "app.mode", "dark"], address: daemon.address).status == 0)
        let changed = try value.finish()
        #expect(changed.status == 0)
        #expect(changed.stdout.contains("app.mode = \"dark\""))
    }

    @Test func ephemeralPropertyLivesAsLongAsTheCommand() throws {
        let daemon = try TestDaemon()
        let holder = try CLIProcess(["set", "session.x", "1", "--ephemeral"], address: daemon.address)
        let rejected = try holder.finish()
        #expect(rejected.status == 1, "reserved keys are refused before anything is held")

        let owner = try CLIProcess(["set", "app.lock", "held", "--ephemeral", "--json"], address: daemon.address)
        let reply = try JSONValue(parsing: try owner.nextLine())
        let version = try #require(reply["version"]?.intValue)
        let property = try CLI.run(["get", "app.lock", "--json"], address: daemon.address).json()["property"]
        #expect(property?["ephemeral"] == true)
        #expect(owner.isRunning)

        let watch = try CLIProcess(
            ["watch", "app.lock", "--since", "\(version)", "--json", "--limit", "1"], address: daemon.address)
        try waitForStreams(1, daemon: daemon)
        owner.signal(SIGTERM)
        let deletion = try JSONValue(parsing: try watch.nextLine())
        #expect(deletion["deleted"] == true)
        #expect(try CLI.run(["get", "app.lock"], address: daemon.address).status == 1)
    }

    @Test func ephemeralSetSaysOnATerminalThatItHoldsTheKey() throws {
        let daemon = try TestDaemon()
        // On a pipe (as above): nothing on standard error. On a terminal (script(1) gives it one): one line.
        let quiet = try CLIProcess(["set", "app.quiet", "1", "--ephemeral", "--json"], address: daemon.address)
        _ = try quiet.nextLine()
        quiet.signal(SIGTERM)
        #expect(try quiet.finish().stderr.isEmpty)

        let command = [
            try BuiltProducts.beaconctl(), "set", "--address", daemon.address, "app.held", "1", "--ephemeral",
        ]
        let terminal = try ChildProcess(
            "/usr/bin/script", ["-q", "-e", "-c", command.joined(separator: " "), "/dev/null"],
            environment: CLI.inheritedEnvironment, output: .capture)
        let said = String(
            decoding: terminal.readOutput(until: { String(decoding: $0, as: UTF8.self).contains("Ctrl-C") }),
            as: UTF8.self)
        #expect(said.contains("holding app.held as an ephemeral property until interrupted"), "\(said)")
        #expect(try CLI.run(["get", "app.held"], address: daemon.address).stdout == "1\n")
        terminal.signal(SIGTERM)
        _ = terminal.wait(within: .seconds(20))
    }
}
