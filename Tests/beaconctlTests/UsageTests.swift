import Testing

/// Command-line parsing: no daemon is needed, and none is contacted.
@Suite struct UsageTests {
    /// An address where nothing listens: parsing errors must be reported before any connection attempt.
    let nowhere = "unix:/nonexistent/beacon.sock"

    @Test func helpListsSubcommandsAndExitStatuses() throws {
        let result = try CLI.run(["--help"], address: nil)
        #expect(result.status == 0)
        for command in [
            "status", "list", "tree", "get", "set", "unset", "watch", "monitor", "post", "wait", "clients",
            "introspect", "call",
        ] {
            #expect(result.stdout.contains("  \(command) "), "help lacks \(command)")
        }
        #expect(result.stdout.contains("EXIT STATUS"))
        for status in 0...5 { #expect(result.stdout.contains("  \(status)  ")) }
    }

    @Test(arguments: [
        ["get"],
        ["set", "only.key"],
        ["frobnicate"],
        ["get", "a", "--timeout", "0"],
        ["get", "a", "--timeout", "soon"],
        ["get", "a", "--address", "tcp:localhost"],
        ["watch"],
        ["watch", "a", "--limit", "0"],
        ["call", "io.beacon.Daemon.Status", "[1,2]"],
        ["call", "io.beacon.Daemon.Status", "--more", "--oneway"],
        ["set", "a", "1", "--if-version", "-1"],
    ])
    func usageErrorsExitTwo(arguments: [String]) throws {
        let result = try CLI.run(arguments, address: nil, environment: ["BEACON_ADDRESS": nowhere])
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("Error: "))
        #expect(result.stderr.contains("Usage: beaconctl") || result.stderr.contains("Help:"))
        #expect(!result.stderr.contains("cannot connect"))
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScripts(shell: String) throws {
        let result = try CLI.run(["--generate-completion-script", shell], address: nil)
        #expect(result.status == 0)
        #expect(result.stdout.contains("beaconctl"))
        #expect(result.stdout.contains("introspect"))
    }

    @Test func invalidBeaconAddressVariableIsAUsageError() throws {
        let result = try CLI.run(["status"], address: nil, environment: ["BEACON_ADDRESS": "/no/scheme.sock"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unix:PATH"))
    }
}
