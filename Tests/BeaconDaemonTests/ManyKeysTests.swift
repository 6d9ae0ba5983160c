import BeaconProtocol
import BeaconTestSupport
import Testing

/// A store of 200,000 keys, read by ranges: List, Watch with `initial` and Dump of prefixes answer from the store's
/// rows and the changes not yet in it, before and after a restart, when the daemon read nothing at its start.
@Suite("Many keys")
struct ManyKeysTests {
    static let groups = 2000
    static let perGroup = 100

    static func name(group: Int, key: Int) -> String { "many.g\(group).k\(key)" }

    /// Sets every key, 2,000 calls at a time; returns the keys with their values.
    static func fill(_ client: VarlinkTestClient) throws -> [String: Int64] {
        var model: [String: Int64] = [:]
        for first in stride(from: 0, to: groups, by: 20) {
            var bytes: [UInt8] = []
            for group in first..<(first + 20) {
                for key in 0..<perGroup {
                    let value = Int64(group * perGroup + key)
                    model[name(group: group, key: key)] = value
                    VarlinkCall(
                        method: "io.beacon.Properties.Set",
                        parameters: ["key": .string(name(group: group, key: key)), "value": .int(value)]
                    ).encode(into: &bytes)
                }
            }
            #expect(client.sendRaw(bytes))
            for _ in 0..<(20 * perGroup) {
                let reply = try client.receive()
                try #require(reply.error == nil, "Set: \(reply.error ?? "")")
            }
        }
        return model
    }

    /// List, Watch(initial) and Dump of several prefixes match `model`.
    static func check(_ daemon: TestDaemon, against model: [String: Int64], _ moment: String) throws {
        let client = try daemon.connect()
        // many.g1 holds many.g1.k* only, not many.g10... which share its first bytes.
        for prefix in ["many.g0", "many.g1", "many.g5", "many.g7", "many.g1999", "many.g7.eph"] {
            let expected = model.keys.filter { $0 == prefix || $0.hasPrefix(prefix + ".") }
                .map { try! PropertyKey($0) }.sorted().map(\.rawValue)
            let list = try client.parameters("io.beacon.Properties.List", ["prefix": .string(prefix)])
            let listed = list["properties"]?.elements ?? []
            #expect(listed.compactMap { $0["key"]?.stringValue } == expected, "List \(prefix), \(moment)")
            for property in listed {
                guard let key = property["key"]?.stringValue else { continue }
                #expect(property["value"]?.intValue == model[key], "List \(prefix): \(key), \(moment)")
            }

            // A watch keeps its connection: each has one of its own.
            let watcher = try daemon.connect()
            defer { watcher.close() }
            let watch = try watcher.call(
                "io.beacon.Properties.Watch", ["patterns": [.string(prefix + ".**")], "initial": true], more: true)
            let changes = watch["changes"]?.elements ?? []
            let below = expected.filter { $0 != prefix }
            #expect(changes.compactMap { $0["key"]?.stringValue }.sorted() == below.sorted(), "Watch \(prefix)")
            for change in changes {
                guard let key = change["key"]?.stringValue else { continue }
                #expect(change["value"]?.intValue == model[key], "Watch \(prefix): \(key), \(moment)")
            }
        }
        let dump = try client.parameters("io.beacon.Settings.Dump", ["prefix": "many.g42"])
        let values = dump["values"]?.members ?? [:]
        #expect(values.count == perGroup, "Dump many.g42, \(moment)")
        #expect(values["k7"]?.intValue == model["many.g42.k7"])
    }

    @Test("List, Watch(initial) and Dump of prefixes among 200,000 keys, before and after a restart")
    func prefixesAmongManyKeys() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        var model = try Self.fill(client)
        // Changes in memory beside the rows: deleted keys, a changed one, an ephemeral one.
        for key in 0..<Self.perGroup where key % 2 == 0 {
            _ = try client.parameters("io.beacon.Properties.Unset", ["key": .string(Self.name(group: 5, key: key))])
            model[Self.name(group: 5, key: key)] = nil
        }
        _ = try client.set("many.g0.k3", 12345)
        model["many.g0.k3"] = 12345
        let owner = try daemon.connect()
        _ = try owner.set("many.g7.eph", 77, ephemeral: true)
        model["many.g7.eph"] = 77
        try Self.check(daemon, against: model, "before the restart")
        let status = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(status["properties"]?.intValue.map(Int.init) == model.count)

        #expect(daemon.terminate() == 0)
        model["many.g7.eph"] = nil
        try daemon.start()
        let again = try daemon.connect()
        // The first call after the start reads its key from the store.
        let get = try again.parameters("io.beacon.Properties.Get", ["key": "many.g1999.k99"])
        #expect(get["property"]?["value"]?.intValue == 199_999)
        try Self.check(daemon, against: model, "after the restart")
        let restarted = try again.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(restarted["properties"]?.intValue.map(Int.init) == model.count)
    }
}
