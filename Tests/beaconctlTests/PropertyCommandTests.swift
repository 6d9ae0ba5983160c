import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

/// get, set, unset, list and tree against the real daemon.
@Suite struct PropertyCommandTests {
    @Test func setThenGetRoundTripsJSONAndPlainStrings() throws {
        let daemon = try TestDaemon()
        let values: [(argument: String, stored: JSONValue)] = [
            ("Ada", "Ada"), ("42", 42), ("true", true), ("null", nil),
            ("\"42\"", "42"), ("[1,\"two\",{\"x\":null}]", [1, "two", ["x": nil]]),
            ("{\"a\":{\"b\":[true]}}", ["a": ["b": [true]]]), ("not json {", "not json {"),
        ]
        for (index, (argument, stored)) in values.enumerated() {
            let key = "test.value\(index)"
            let set = try CLI.run(["set", key, argument], address: daemon.address)
            #expect(set.status == 0, "\(argument): \(set.stderr)")
            #expect(set.stdout.isEmpty)
            #expect(set.stderr.isEmpty)

            let get = try CLI.run(["get", key], address: daemon.address)
            #expect(get.status == 0)
            #expect(try JSONValue(parsing: get.lines.first ?? "") == stored, "\(argument)")
        }
        // A value that starts with a dash comes after "--".
        #expect(try CLI.run(["set", "test.negative", "--", "-1.5"], address: daemon.address).status == 0)
        #expect(try CLI.run(["get", "test.negative"], address: daemon.address).stdout == "-1.5\n")

        let raw = try CLI.run(["get", "--raw", "test.value0"], address: daemon.address)
        #expect(raw.stdout == "Ada\n")
    }

    @Test func valuesThatStartLikeJSONMustBeJSONAndNegativeNumbersAreValues() throws {
        let daemon = try TestDaemon()
        let failures = [
            ("{\"unterminated", "at the end of"), ("[1,2", "at the end of"), ("\"open", "at the end of"),
            (" {\"a\":}", "at byte 7 of"),
        ]
        for (argument, place) in failures {
            let set = try CLI.run(["set", "test.bad", argument], address: daemon.address)
            #expect(set.status == 2, "\(argument): \(set.stderr)")
            #expect(set.stderr.contains("VALUE starts like JSON but is not JSON"), "\(set.stderr)")
            #expect(set.stderr.contains(place), "\(argument): \(set.stderr)")
            let post = try CLI.run(["post", "test.bad", argument], address: daemon.address)
            #expect(post.status == 2, "\(argument): \(post.stderr)")
        }
        #expect(try CLI.run(["get", "test.bad"], address: daemon.address).status == 1, "nothing was stored")

        // --string stores any text as it is; a plain word is still a string without it.
        #expect(try CLI.run(["set", "--string", "test.text", "{\"unterminated"], address: daemon.address).status == 0)
        #expect(try CLI.run(["get", "test.text"], address: daemon.address).stdout == #""{\"unterminated""# + "\n")
        #expect(try CLI.run(["set", "test.number", "42", "--string"], address: daemon.address).status == 0)
        #expect(try CLI.run(["get", "test.number"], address: daemon.address).stdout == "\"42\"\n")

        // A negative number is a value, before or after the options.
        let negative = try CLI.run(["set", "test.offset", "-1.5"], address: daemon.address)
        #expect(negative.status == 0, "\(negative.stderr)")
        #expect(try CLI.run(["get", "test.offset"], address: daemon.address).stdout == "-1.5\n")
        let withJSON = try CLI.run(["set", "test.offset", "-7", "--json"], address: daemon.address)
        #expect(withJSON.status == 0, "\(withJSON.stderr)")
        #expect(try withJSON.json()["version"]?.intValue != nil)
        #expect(try CLI.run(["get", "test.offset"], address: daemon.address).stdout == "-7\n")
    }

    @Test func jsonShapesOfGetSetAndUnset() throws {
        let daemon = try TestDaemon()
        let set = try CLI.run(["set", "user.name", "Ada", "--json"], address: daemon.address)
        #expect(set.status == 0)
        let version = try #require(try set.json()["version"]?.intValue)
        #expect(set.lines.count == 1)

        let get = try CLI.run(["get", "user.name", "--json"], address: daemon.address)
        let property = try #require(try get.json()["property"]?.objectValue)
        #expect(Set(property.keys) == ["key", "value", "version", "modifiedUsec", "ephemeral", "origin"])
        #expect(property["key"] == "user.name")
        #expect(property["value"] == "Ada")
        #expect(property["version"]?.intValue == version)
        #expect(property["ephemeral"] == false)
        #expect(property["origin"]?["command"] == "beaconctl")
        #expect(property["origin"]?["pid"]?.intValue != nil)
        #expect(property["origin"]?["uid"]?.intValue == Int64(getuid()))

        let unset = try CLI.run(["unset", "user.name", "--json"], address: daemon.address)
        #expect(unset.status == 0)
        #expect(try unset.json()["version"]?.intValue == version + 1)
    }

    @Test func daemonErrorsExitOneWithNameAndExplanation() throws {
        let daemon = try TestDaemon()
        let missing = try CLI.run(["get", "no.such.key"], address: daemon.address)
        #expect(missing.status == 1)
        #expect(missing.stdout.isEmpty)
        #expect(missing.stderr == "Error: io.beacon.Properties.KeyNotFound: no property is stored under no.such.key\n")

        let readOnly = try CLI.run(["set", "daemon.mine", "1"], address: daemon.address)
        #expect(readOnly.status == 1)
        #expect(readOnly.stderr.hasPrefix("Error: io.beacon.Properties.ReadOnly: daemon.mine is read-only"))

        let invalid = try CLI.run(["set", "bad..key", "1"], address: daemon.address)
        #expect(invalid.status == 1)
        #expect(invalid.stderr.hasPrefix("Error: io.beacon.Properties.InvalidKey: \"bad..key\" is not a valid key"))

        let unsetMissing = try CLI.run(["unset", "no.such.key"], address: daemon.address)
        #expect(unsetMissing.status == 1)
        #expect(unsetMissing.stderr.contains("io.beacon.Properties.KeyNotFound"))
    }

    @Test func ifVersionIsACompareAndSet() throws {
        let daemon = try TestDaemon()
        let create = try CLI.run(["set", "counter", "1", "--if-version", "0", "--json"], address: daemon.address)
        #expect(create.status == 0)
        let version = try #require(try create.json()["version"]?.intValue)

        let again = try CLI.run(["set", "counter", "1", "--if-version", "0"], address: daemon.address)
        #expect(again.status == 1)
        #expect(
            again.stderr
                == "Error: io.beacon.Properties.VersionMismatch: counter is at version \(version), expected not to exist\n"
        )

        let stale = try CLI.run(["set", "counter", "3", "--if-version", "\(version + 5)"], address: daemon.address)
        #expect(stale.status == 1)
        #expect(stale.stderr.contains("VersionMismatch"))

        let update = try CLI.run(["set", "counter", "2", "--if-version", "\(version)"], address: daemon.address)
        #expect(update.status == 0)
        #expect(try CLI.run(["get", "counter"], address: daemon.address).stdout == "2\n")

        let unsetStale = try CLI.run(["unset", "counter", "--if-version", "\(version)"], address: daemon.address)
        #expect(unsetStale.status == 1)
    }

    @Test func listPrintsATableAndJSON() throws {
        let daemon = try TestDaemon()
        for (key, value) in [("power.ac", "true"), ("power.battery.level", "80"), ("user.name", "Ada")] {
            #expect(try CLI.run(["set", key, value], address: daemon.address).status == 0)
        }
        let table = try CLI.run(["list"], address: daemon.address)
        #expect(table.status == 0)
        #expect(table.lines.count == 4)
        let header = try #require(table.lines.first)
        #expect(header.hasPrefix("KEY"))
        for column in ["VALUE", "VERSION", "LIFETIME", "MODIFIED", "ORIGIN"] { #expect(header.contains(column)) }
        #expect(!table.stdout.contains("\u{1B}["), "no colour when stdout is not a terminal")
        // Columns are aligned: every row has its value where the header has VALUE.
        let valueColumn = try #require(header.range(of: "VALUE")).lowerBound.utf16Offset(in: header)
        let rows = table.lines.dropFirst()
        #expect(
            rows.map { $0.split(separator: " ").first.map(String.init) } == [
                "power.ac", "power.battery.level", "user.name",
            ])
        for row in rows {
            let value = row.dropFirst(valueColumn).prefix(while: { $0 != " " })
            #expect(["true", "80", "\"Ada\""].contains(String(value)), "\(row)")
            #expect(row.contains("persistent"))
            #expect(row.contains("beaconctl["))
        }

        let prefixed = try CLI.run(["list", "power", "--json"], address: daemon.address)
        let reply = try prefixed.json()
        let keys = (reply["properties"]?.arrayValue ?? []).compactMap { $0["key"]?.stringValue }
        #expect(keys == ["power.ac", "power.battery.level"])
        #expect(reply["version"]?.intValue == 3)
    }

    @Test func treeNestsKeySegments() throws {
        let daemon = try TestDaemon()
        for (key, value) in [("power.ac", "true"), ("power.battery.level", "80"), ("user.name", "Ada")] {
            #expect(try CLI.run(["set", key, value], address: daemon.address).status == 0)
        }
        let tree = try CLI.run(["tree"], address: daemon.address)
        #expect(tree.status == 0)
        #expect(
            tree.lines == [
                "power", "├─ ac = true", "└─ battery", "   └─ level = 80", "user", "└─ name = \"Ada\"",
            ])

        let json = try CLI.run(["tree", "power", "--json"], address: daemon.address).json()
        let expected: JSONValue = [
            "children": [
                "power": [
                    "children": ["ac": ["value": true], "battery": ["children": ["level": ["value": 80]]]]
                ]
            ]
        ]
        #expect(json == expected)
    }
}

/// `get` takes its options in any order and spelling, whether or not it runs without the argument parser.
@Suite struct GetSpellingTests {
    @Test func optionsInAnyOrder() throws {
        let daemon = try TestDaemon()
        #expect(try CLI.run(["set", "user.name", "Ada"], address: daemon.address).status == 0)
        let variants: [([String], String)] = [
            (["get", "user.name"], "\"Ada\"\n"),
            (["get", "-r", "user.name"], "Ada\n"),
            (["get", "user.name", "--raw", "--timeout=5"], "Ada\n"),
            (["get", "--timeout", "5", "--", "user.name"], "\"Ada\"\n"),
            (["get", "--address=\(daemon.address)", "user.name"], "\"Ada\"\n"),
        ]
        for (arguments, expected) in variants {
            let result = try CLI.run(
                arguments, address: arguments.contains { $0.hasPrefix("--address") } ? nil : daemon.address)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(result.stdout == expected, "\(arguments)")
        }
        let json = try CLI.run(["get", "--json", "user.name", "--raw"], address: daemon.address)
        #expect(try json.json()["property"]?["value"] == "Ada")

        for arguments in [
            ["get", "user.name", "extra"], ["get", "--timeout", "-3", "user.name"], ["get", "--bogus", "x"],
        ] {
            let result = try CLI.run(arguments, address: daemon.address)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains("Usage: beaconctl get"))
        }
    }
}
