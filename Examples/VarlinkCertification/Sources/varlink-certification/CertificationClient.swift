import Varlink
import VarlinkClient

/// The certification's client side, written against the generated `Certification.Client`: Start, Test01 … Test11
/// and End in order, each given what the one before returned, every reply checked; then a call out of order, which
/// must fail with the interface's own `CertificationError`.
struct CertificationClient {
    let certification: Certification.Client

    struct Mismatch: Error, CustomStringConvertible {
        var description: String
    }

    private func check(_ condition: Bool, _ what: @autoclosure () -> String) throws(Mismatch) {
        guard condition else { throw Mismatch(description: what()) }
    }

    /// Runs the certification; prints one line per step.
    func run() async throws {
        let id = try await certification.start().clientId
        print("Start: client_id \(id)")
        let bool = try await certification.test01(clientId: id).bool
        try check(bool, "Test01 returned bool \(bool), not true")
        let int = try await certification.test02(clientId: id, bool: bool).int
        try check(int == 1, "Test02 returned int \(int), not 1")
        let float = try await certification.test03(clientId: id, int: int).float
        try check(float == 1.0, "Test03 returned float \(float), not 1.0")
        let string = try await certification.test04(clientId: id, float: float).string
        try check(string == "ping", "Test04 returned string \(string), not ping")
        let four = try await certification.test05(clientId: id, string: string)
        try check(four.string == "a lot of string", "Test05 returned string \(four.string)")
        let structure = try await certification.test06(
            clientId: id, bool: four.bool, int: four.int, float: four.float, string: four.string
        ).struct
        try check(structure.float == Double.pi, "Test06 returned float \(structure.float), not pi")
        let map = try await certification.test07(
            clientId: id,
            struct: .init(bool: structure.bool, int: structure.int, float: structure.float, string: structure.string)
        ).map
        try check(map == ["foo": "Foo", "bar": "Bar"], "Test07 returned map \(map)")
        let set = try await certification.test08(clientId: id, map: map).set
        try check(set == ["one", "two", "three"], "Test08 returned set \(set)")
        let mytype = try await certification.test09(clientId: id, set: set).mytype
        try check(mytype.enum == .two, "Test09 returned enum \(mytype.enum), not two")
        try check(mytype.interface.anon == .init(foo: true, bar: false), "Test09 returned anon \(mytype.interface)")
        print("Test01 ... Test09: as prescribed")

        var strings: [String] = []
        for try await streamed in certification.test10(clientId: id, mytype: mytype) {
            strings.append(streamed.string)
        }
        try check(strings == (1...10).map { "Reply number \($0)" }, "Test10 streamed \(strings)")
        print("Test10: \(strings.count) replies streamed")

        // Oneway: no reply; End on the same connection is answered after it.
        try await certification.test11(clientId: id, lastMoreReplies: strings)
        let allOk = try await certification.end(clientId: id).allOk
        try check(allOk, "End returned all_ok false")
        print("End: all_ok \(allOk)")

        // Out of order: the interface's own error, with its parameters decoded.
        let again = try await certification.start().clientId
        do {
            _ = try await certification.test02(clientId: again, bool: true)
            throw Mismatch(description: "Test02 before Test01 was answered")
        } catch Certification.Error.certificationError(let details) {
            try check(details.got.description.contains("Test02"), "CertificationError got \(details.got)")
            print("Test02 out of order: CertificationError, wants \(details.wants)")
        }
    }
}
