import BeaconProtocol
import Testing

@testable import BeaconClient

@Suite("BeaconClient's typed calls cover the interfaces")
struct TypedCallCoverageTests {
    @Test("every method of every Beacon interface has a typed function in BeaconClient")
    func everyMethodTyped() throws {
        var methods: Set<String> = []
        for (_, text) in BeaconInterfaces.all {
            let interface = try VarlinkInterface(parsing: text)
            for method in interface.methods { methods.insert("\(interface.name).\(method.name)") }
        }
        #expect(methods.count >= 20)
        #expect(methods.subtracting(Method.typed).sorted() == [], "methods of the IDL without a typed function")
        #expect(Method.typed.subtracting(methods).sorted() == [], "typed functions for methods the IDL lacks")
    }
}
