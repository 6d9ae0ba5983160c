import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconDaemon

@Suite("org.varlink.service")
struct ServiceInterfaceTests {
    @Test("GetInfo lists every interface and GetInterfaceDescription returns each IDL text")
    func introspection() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        let info = try client.parameters("org.varlink.service.GetInfo")
        #expect(info["product"] == "beacond")
        #expect(info["vendor"] == "Beacon")
        let names = info["interfaces"]?.elements.compactMap(\.stringValue) ?? []
        #expect(names.contains("org.varlink.service"))
        for (name, text) in BeaconInterfaces.all {
            #expect(names.contains(name))
            let reply = try client.parameters(
                "org.varlink.service.GetInterfaceDescription", ["interface": .string(name)])
            #expect(reply["description"]?.stringValue == text)
            let parsed = try VarlinkInterface(parsing: text)
            #expect(parsed.name == name)
        }
        let service = try client.parameters(
            "org.varlink.service.GetInterfaceDescription",
            ["interface": "org.varlink.service"]
        )
        let serviceIDL = try VarlinkInterface(parsing: service["description"]?.stringValue ?? "")
        #expect(serviceIDL.methods.map(\.name).sorted() == ["GetInfo", "GetInterfaceDescription"])
    }

    @Test("standard errors: InterfaceNotFound, MethodNotFound, InvalidParameter, ExpectedMore")
    func standardErrors() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()

        var reply = try client.call("org.varlink.service.GetInterfaceDescription", ["interface": "com.example.Nope"])
        #expect(reply.error == "org.varlink.service.InterfaceNotFound")
        #expect(reply["interface"] == "com.example.Nope")

        reply = try client.call("org.varlink.service.GetInterfaceDescription")
        #expect(reply.error == "org.varlink.service.InvalidParameter")
        #expect(reply["parameter"] == "interface")

        reply = try client.call("com.example.Nope.Method")
        #expect(reply.error == "org.varlink.service.InterfaceNotFound")
        #expect(reply["interface"] == "com.example.Nope")

        reply = try client.call("io.beacon.Properties.Frobnicate")
        #expect(reply.error == "org.varlink.service.MethodNotFound")
        #expect(reply["method"] == "io.beacon.Properties.Frobnicate")

        reply = try client.call("io.beacon.Properties.Get", ["key": 42])
        #expect(reply.error == "org.varlink.service.InvalidParameter")
        #expect(reply["parameter"] == "key")

        reply = try client.call("io.beacon.Properties.Set", ["key": "a.b"])
        #expect(reply.error == "org.varlink.service.InvalidParameter")
        #expect(reply["parameter"] == "value")

        reply = try client.call("io.beacon.Properties.Watch", ["patterns": ["**"]])
        #expect(reply.error == "org.varlink.service.ExpectedMore")
        reply = try client.call("io.beacon.Notifications.Observe", ["patterns": ["**"]])
        #expect(reply.error == "org.varlink.service.ExpectedMore")

        // The connection is still usable after errors.
        let info = try client.parameters("org.varlink.service.GetInfo")
        #expect(info["product"] == "beacond")
    }
}

@Suite("the bus's method table")
struct BusMethodTableTests {
    @Test("answers exactly the methods of Beacon's .varlink files, streaming those marked @mode stream")
    func tableFollowsTheInterfaces() throws {
        var declared: [String: Bool] = [:]
        for (name, text) in BeaconInterfaces.all {
            for method in try VarlinkInterface(parsing: text).methods {
                declared[name + "." + method.name] = isStreamed(method.documentation)
            }
        }
        #expect(Set(BusMethods.table.keys) == Set(declared.keys))
        for (name, method) in BusMethods.table {
            #expect(method.streams == declared[name], "\(name)")
        }
        #expect(BusMethods.table[IOBeaconProperties.Watch.method]?.streams == true)
        #expect(BusMethods.table[IOBeaconProperties.Get.method]?.streams == false)
    }

    private func isStreamed(_ documentation: String) -> Bool {
        documentation.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "@mode stream" }
    }
}
