import BeaconProtocol
import BeaconTestSupport
import Testing

@Suite("io.beacon.Properties")
struct PropertiesTests {
    @Test("Set, Get, List and Unset with versions and origins")
    func roundTrip() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        let first = try client.set("user.name", "alice")
        let second = try client.set("user.address.city", ["name": "Paris", "zip": 75001])
        #expect(second > first)
        try client.set("user-b", 1.5)
        try client.set("userx", nil)

        let property = try client.parameters("io.beacon.Properties.Get", ["key": "user.name"])["property"]?.members
        #expect(property?["key"] == "user.name")
        #expect(property?["value"] == "alice")
        #expect(property?["version"]?.intValue == first)
        #expect(property?["ephemeral"] == false)
        #expect(property?["origin"]?["pid"]?.intValue == testPID)
        #expect(property?["origin"]?["uid"]?.intValue == testUID)
        #expect(property?["origin"]?["command"]?.stringValue?.isEmpty == false)
        #expect((property?["modifiedUsec"]?.intValue ?? 0) > 1_600_000_000_000_000)

        let nested = try client.parameters("io.beacon.Properties.Get", ["key": "user.address.city"])
        #expect(nested["property"]?["value"] == ["name": "Paris", "zip": 75001])

        // List by prefix is segment-wise and sorted.
        let listed = try client.parameters("io.beacon.Properties.List", ["prefix": "user"])
        #expect(
            listed["properties"]?.elements.compactMap { $0["key"]?.stringValue } == ["user.address.city", "user.name"])
        #expect(listed["version"]?.intValue == second + 2)
        let everything = try client.parameters("io.beacon.Properties.List")
        #expect(everything["properties"]?.elements.count == 4)

        let unset = try client.parameters("io.beacon.Properties.Unset", ["key": "user.name"])
        #expect((unset["version"]?.intValue ?? 0) > second)
        let missing = try client.call("io.beacon.Properties.Get", ["key": "user.name"])
        #expect(missing.error == "io.beacon.Properties.KeyNotFound")
        #expect(missing["key"] == "user.name")
        let unsetAgain = try client.call("io.beacon.Properties.Unset", ["key": "user.name"])
        #expect(unsetAgain.error == "io.beacon.Properties.KeyNotFound")
    }

    @Test("a Set of the same members in another order is unchanged, as the IDL says")
    func memberOrder() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        /// A Set whose value is sent byte for byte as `value`.
        func set(_ value: String) throws -> VarlinkReply {
            let call = #"{"method":"io.beacon.Properties.Set","parameters":{"key":"app.window","value":"# + value + "}}"
            client.sendRaw(Array(call.utf8) + [0])
            return try client.receive()
        }
        let first = try set(#"{"b":1,"a":2}"#)
        #expect(first.error == nil)
        for order in [#"{"a":2,"b":1}"#, #"{"b":1,"a":2}"#] {
            let again = try set(order)
            #expect(again["unchanged"] == true, "\(order)")
            #expect(again["version"] == first["version"])
        }
        let changed = try set(#"{"a":2,"b":2}"#)
        #expect(changed["unchanged"] == nil)
        #expect((changed["version"]?.intValue ?? 0) > (first["version"]?.intValue ?? 0))
    }

    @Test("repeated Gets follow every change of the key: value, version, ephemeral, origin, unset and set again")
    func repeatedGets() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        let other = try daemon.connect()
        func property(_ key: String = "app.mode") throws -> JSONValue? {
            try client.parameters("io.beacon.Properties.Get", ["key": .string(key)])["property"]
        }
        let first = try client.set("app.mode", "light")
        #expect(try property()?["version"]?.intValue == first)
        #expect(try property()?["value"] == "light")

        let second = try other.set("app.mode", "dark")
        var got = try property()
        #expect(got?["value"] == "dark")
        #expect(got?["version"]?.intValue == second)

        let ephemeral = try other.parameters(
            "io.beacon.Properties.Set", ["key": "app.mode", "value": "auto", "ephemeral": true])
        got = try property()
        #expect(got?["value"] == "auto")
        #expect(got?["ephemeral"] == true)
        #expect(got?["version"] == ephemeral["version"])

        // The ephemeral owner leaves: the key goes away with it.
        other.close()
        try waitUntil("the ephemeral key is gone", within: .seconds(10)) {
            try client.call("io.beacon.Properties.Get", ["key": "app.mode"]).error
                == "io.beacon.Properties.KeyNotFound"
        }
        let third = try client.set("app.mode", "light")
        got = try property()
        #expect(got?["value"] == "light")
        #expect(got?["ephemeral"] == false)
        #expect(got?["version"]?.intValue == third)

        // A name canonically equivalent to a stored key but spelled with other bytes is not that key.
        try client.set("app.Key", 1)
        let kelvin = try client.call("io.beacon.Properties.Get", ["key": "app.\u{212A}ey"])
        #expect(kelvin.error == "io.beacon.Properties.InvalidKey")
        // Compared byte for byte: as Strings, the two spellings are equal.
        #expect(try property("app.Key")?["key"]?.stringValue.map { Array($0.utf8) } == Array("app.Key".utf8))

        // A value whose reply is too long to keep with its entry is answered the same way every time.
        let long = String(repeating: "x", count: 4000)
        try client.set("app.long", .string(long))
        #expect(try property("app.long")?["value"]?.stringValue == long)
        #expect(try property("app.long")?["value"]?.stringValue == long)
        _ = try client.parameters("io.beacon.Properties.Unset", ["key": "app.long"])
        #expect(
            try client.call("io.beacon.Properties.Get", ["key": "app.long"]).error == "io.beacon.Properties.KeyNotFound"
        )
    }

    @Test("ifVersion compare-and-set on Set and Unset")
    func compareAndSet() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        let created = try client.parameters("io.beacon.Properties.Set", ["key": "counter", "value": 1, "ifVersion": 0])
        let version = try #require(created["version"]?.intValue)

        var reply = try client.call("io.beacon.Properties.Set", ["key": "counter", "value": 2, "ifVersion": 0])
        #expect(reply.error == "io.beacon.Properties.VersionMismatch")
        #expect(reply["key"] == "counter")
        #expect(reply["expected"] == 0)
        #expect(reply["actual"]?.intValue == version)

        reply = try client.call("io.beacon.Properties.Set", ["key": "counter", "value": 2, "ifVersion": .int(version)])
        #expect(reply.error == nil)
        let updated = try #require(reply["version"]?.intValue)

        reply = try client.call("io.beacon.Properties.Unset", ["key": "counter", "ifVersion": .int(version)])
        #expect(reply.error == "io.beacon.Properties.VersionMismatch")
        #expect(reply["actual"]?.intValue == updated)
        reply = try client.call("io.beacon.Properties.Unset", ["key": "counter", "ifVersion": .int(updated)])
        #expect(reply.error == nil)

        reply = try client.call("io.beacon.Properties.Set", ["key": "counter", "value": 3, "ifVersion": 7])
        #expect(reply.error == "io.beacon.Properties.VersionMismatch")
        #expect(reply["actual"] == 0)
    }

    @Test(
        "reserved prefixes are read-only",
        arguments: [
            "lifecycle.state", "session.active", "system.sleeping", "desktop.appearance.colorScheme", "daemon.x",
        ])
    func readOnly(key: String) throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        var reply = try client.call("io.beacon.Properties.Set", ["key": .string(key), "value": true])
        #expect(reply.error == "io.beacon.Properties.ReadOnly")
        #expect(reply["key"]?.stringValue == key)
        reply = try client.call("io.beacon.Properties.Unset", ["key": .string(key)])
        #expect(reply.error == "io.beacon.Properties.ReadOnly")
        // Reading is allowed.
        reply = try client.call("io.beacon.Properties.Get", ["key": .string(key)])
        #expect(reply.error == "io.beacon.Properties.KeyNotFound")
    }

    @Test("invalid keys, patterns, oversized values and too many patterns get named errors")
    func invalidInput() throws {
        let daemon = try TestDaemon(arguments: [
            "--limits-max-value-size", "100", "--limits-max-patterns", "3", "--limits-max-key-depth", "4",
        ])
        let client = try daemon.connect()
        for key in ["", "a..b", "a.*", "with space", ".a", "a.", "a.b.c.d.e"] {
            let reply = try client.call("io.beacon.Properties.Set", ["key": .string(key), "value": 1])
            #expect(reply.error == "io.beacon.Properties.InvalidKey", "key \(key)")
            #expect(reply["key"]?.stringValue == key)
            #expect(reply["reason"]?.stringValue?.isEmpty == false)
            let get = try client.call("io.beacon.Properties.Get", ["key": .string(key)])
            #expect(get.error == "io.beacon.Properties.InvalidKey", "Get of key \(key)")
        }
        let long = String(repeating: "x", count: 300)
        var reply = try client.call("io.beacon.Properties.Get", ["key": .string(long)])
        #expect(reply.error == "io.beacon.Properties.InvalidKey")

        reply = try client.call(
            "io.beacon.Properties.Set", ["key": "big", "value": .string(String(repeating: "v", count: 200))])
        #expect(reply.error == "io.beacon.Properties.ValueTooLarge")
        #expect(reply["key"] == "big")
        #expect(reply["size"] == 202)
        #expect(reply["limit"] == 100)

        reply = try client.call("io.beacon.Properties.Watch", ["patterns": ["a.**.b"]], more: true)
        #expect(reply.error == "io.beacon.Properties.InvalidPattern")
        #expect(reply["pattern"] == "a.**.b")
        reply = try client.call("io.beacon.Properties.Watch", ["patterns": ["a", "b", "c", "d"]], more: true)
        #expect(reply.error == "io.beacon.LimitExceeded")
        #expect(reply["limit"] == "maxPatterns")
        #expect(reply["maximum"] == 3)
        reply = try client.call("io.beacon.Properties.List", ["prefix": "a.*"])
        #expect(reply.error == "io.beacon.Properties.InvalidKey")
    }

    /// Calls whose member names are written with escapes are parsed in full instead of read in place: both ways
    /// must read the same parameters and give the same answers.
    @Test("calls with escaped member names get the same answers as calls read in place")
    func escapedMemberNames() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        func raw(_ text: String) throws -> VarlinkReply {
            client.sendRaw(Array(text.utf8) + [0])
            return try client.receive()
        }
        var reply = try raw(
            #"{"method":"io.beacon.Properties.Set","parameters":{"k\u0065y":"app.mode","v\u0061lue":{"n":[1,"x"]}}}"#)
        #expect(reply.error == nil)
        let first = try #require(reply.parameters["version"]?.intValue)
        let plain = try client.parameters("io.beacon.Properties.Get", ["key": "app.mode"])["property"]
        #expect(plain?["value"] == ["n": [1, "x"]])
        #expect(plain?["version"]?.intValue == first)
        #expect(plain?["ephemeral"] == false)

        reply = try raw(
            #"{"method":"io.beacon.Properties.Set","parameters":{"key":"app.mode","value":2,"\u0069fVersion":\#(first),"ephemer\u0061l":true}}"#
        )
        #expect(reply.error == nil)
        let second = try #require(reply.parameters["version"]?.intValue)
        reply = try raw(#"{"method":"io.beacon.Properties.Get","parameters":{"\u006bey":"app.mode"}}"#)
        #expect(reply.parameters["property"]?["value"] == 2)
        #expect(reply.parameters["property"]?["version"]?.intValue == second)
        #expect(reply.parameters["property"]?["ephemeral"] == true)

        // The same errors either way (a stale ifVersion, a parameter of the wrong type, a missing one), and an
        // unknown parameter is ignored.
        reply = try raw(
            #"{"method":"io.beacon.Properties.Set","parameters":{"key":"app.mode","value":3,"\u0069fVersion":\#(first)}}"#
        )
        #expect(reply.error == "io.beacon.Properties.VersionMismatch")
        #expect(reply.parameters["actual"]?.intValue == second)
        reply = try raw(#"{"method":"io.beacon.Properties.Set","parameters":{"k\u0065y":7,"value":3}}"#)
        #expect(reply.error == "org.varlink.service.InvalidParameter")
        #expect(reply.parameters["parameter"] == "key")
        reply = try raw(#"{"method":"io.beacon.Properties.Set","parameters":{"k\u0065y":"app.mode"}}"#)
        #expect(reply.error == "org.varlink.service.InvalidParameter")
        #expect(reply.parameters["parameter"] == "value")
        reply = try raw(
            #"{"method":"io.beacon.Properties.Get","parameters":{"k\u0065y":"app.mode","ephemeral":"yes"}}"#)
        #expect(reply.parameters["property"]?["value"] == 2)
    }
}
