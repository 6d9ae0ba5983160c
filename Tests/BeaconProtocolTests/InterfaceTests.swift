import Foundation
import Testing

@testable import BeaconProtocol
@testable import Varlink

@Suite("varlink interface descriptions")
struct InterfaceTests {
    @Test func serviceInterface() throws {
        let interface = try VarlinkInterface(parsing: VarlinkServiceInterface.description)
        #expect(interface.name == "org.varlink.service")
        #expect(interface.methods.map(\.name) == ["GetInfo", "GetInterfaceDescription"])
        #expect(
            interface.errors.map(\.name) == [
                "InterfaceNotFound", "MethodNotFound", "MethodNotImplemented", "InvalidParameter",
                "PermissionDenied", "ExpectedMore",
            ])
        // The names programs compare with are those the description declares, qualified.
        let qualified = { (name: String) in "org.varlink.service." + name }
        #expect(VarlinkServiceInterface.Names.methods == interface.methods.map { qualified($0.name) })
        #expect(VarlinkServiceInterface.Names.errors == interface.errors.map { qualified($0.name) })
        let getInfo = try #require(interface.method(named: "GetInfo"))
        #expect(getInfo.input.isEmpty)
        #expect(getInfo.output.map(\.name) == ["vendor", "product", "version", "url", "interfaces"])
        #expect(getInfo.output.last?.type == .array(.string))
        #expect(getInfo.documentation.contains("interfaces"))
        #expect(
            interface.error(named: "InvalidParameter")?.parameters == [VarlinkField(name: "parameter", type: .string)])
        #expect(interface.missingParameter(method: "GetInterfaceDescription", in: [:]) == "interface")
        #expect(interface.missingParameter(method: "GetInterfaceDescription", in: ["interface": nil]) == "interface")
        #expect(interface.missingParameter(method: "GetInterfaceDescription", in: ["interface": "a.b"]) == nil)
        #expect(interface.missingParameter(method: "GetInfo", in: [:]) == nil)
        #expect(interface.missingParameter(method: "Nope", in: [:]) == nil)
    }

    @Test func typesOfEveryKind() throws {
        let interface = try VarlinkInterface(
            parsing: """
                # Documentation of the interface.
                interface com.example.kinds-2 # trailing comment

                type Color (red, green, blue)
                type Item (
                  name: string,   # a name
                  size: ?int,
                  ratio: float,
                  on: bool,
                  extra: object,
                  tags: []string,
                  map: [string]?Item,
                  set: [string](),
                  color: Color,
                  inline: (a: int, b: (x, y)),
                  maybe: ?[]?[string](p, q)
                )

                method Put(item: Item, flag: ?bool) -> ()
                method Get(name: string) -> (item: ?Item, all: []Item)
                error Missing (name: string)
                error Broken ()
                """)
        #expect(interface.name == "com.example.kinds-2")
        #expect(interface.documentation == "Documentation of the interface.")
        let item = try #require(interface.type(named: "Item"))
        guard case .structure(let fields) = item.type else {
            Issue.record("Item is not a struct")
            return
        }
        #expect(
            fields.map(\.type.description) == [
                "string", "?int", "float", "bool", "object", "[]string", "[string]?Item", "[string]()", "Color",
                "(a: int, b: (x, y))", "?[]?[string](p, q)",
            ])
        #expect(interface.type(named: "Color")?.type == .enumeration(["red", "green", "blue"]))
        #expect(interface.method(named: "Get")?.output.map(\.name) == ["item", "all"])

        let good: [String: JSONValue] = [
            "item": [
                "name": "n", "ratio": 1, "on": true, "extra": [1, 2], "tags": ["a"], "map": ["k": nil],
                "set": ["x": [:]], "color": "green", "inline": ["a": 1, "b": "y"], "maybe": [nil, ["z": "q"]],
            ]
        ]
        #expect(interface.invalidParameter(method: "Put", in: good) == nil)
        #expect(interface.missingParameter(method: "Put", in: ["flag": true]) == "item")
        var bad = good
        bad["item"]?.setMember("color", to: "purple")
        #expect(interface.invalidParameter(method: "Put", in: bad) == "item")
        #expect(interface.invalidParameter(method: "Put", in: ["item": good["item"]!, "flag": 1]) == "flag")
        // The item's object member (extra) may hold null, but may not be absent.
        var null = good
        null["item"]?.setMember("extra", to: .null)
        #expect(interface.invalidParameter(method: "Put", in: null) == nil)
        var absent = good
        if case .object(var members)? = absent["item"] {
            members["extra"] = nil
            absent["item"] = .object(members)
        }
        #expect(interface.invalidParameter(method: "Put", in: absent) == "item")
        #expect(interface.invalidParameter(method: "Put", in: ["item": good["item"]!, "zzz": 1]) == nil)
        #expect(
            interface.invalidParameter(method: "Put", in: ["item": good["item"]!, "zzz": 1], rejectingUnknown: true)
                == "zzz")
    }

    @Test(arguments: [
        ("", "expected 'interface'"),
        ("interface a", "invalid interface name"),
        ("interface a.b", "no members"),
        ("interface a.b\nmethod get() -> ()", "not a valid name"),
        ("interface a.b\nmethod Get() -> ()\nmethod Get() -> ()", "declared twice"),
        ("interface a.b\nmethod Get(a: any) -> ()", "unknown type \"any\""),
        ("interface a.b\nmethod Get(a: Thing) -> ()", "unknown type \"Thing\""),
        ("interface a.b\nmethod Get(a: ??int) -> ()", "cannot be repeated"),
        ("interface a.b\nmethod Get(a: int, a: int) -> ()", "appears twice"),
        ("interface a.b\nmethod Get(a: int) (b: int)", "expected '->'"),
        ("interface a.b\nmethod Get(a, b) -> ()", "found an enum"),
        ("interface a.b\ntype T (a, b: int)", "no types"),
        ("interface a.b\ntype T (a: int, b)", "expected ':'"),
        ("interface a.b\ntype T (a: int,)", "expected a field name"),
        ("interface a.b\nfunction F() -> ()", "expected 'type', 'method' or 'error'"),
        ("interface a.b\nmethod Get(a: int -> ()", "expected ',' or ')'"),
        ("interface a.b\nmethod Get(a__b: int) -> ()", "not a valid field name"),
    ])
    func rejects(text: String, reasonFragment: String) {
        #expect {
            try VarlinkInterface(parsing: text)
        } throws: { ($0 as? VarlinkIDLError)?.reason.contains(reasonFragment) == true }
    }

    @Test func errorPositions() {
        do {
            _ = try VarlinkInterface(parsing: "interface a.b\n\nmethod Get(x: Nope) -> ()")
            Issue.record("expected an error")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 15)
            #expect(error.description.contains("line 3"))
        }
    }

    @Test func deeplyNestedTypesAreRejectedNotCrashing() {
        let text = "interface a.b\ntype T (x: " + String(repeating: "[]", count: 10_000) + "int)"
        #expect(throws: VarlinkIDLError.self) { try VarlinkInterface(parsing: text) }
        let parens = "interface a.b\ntype T (x: " + String(repeating: "(y: ", count: 10_000) + "int"
        #expect(throws: VarlinkIDLError.self) { try VarlinkInterface(parsing: parens) }
    }

    /// Seeded mutations of a valid description: always an interface or a `VarlinkIDLError`, never a crash.
    @Test func mutatedDescriptionsNeverCrash() {
        var generator = SplitMix64(seed: 0x1D1)
        let seed = Array(VarlinkServiceInterface.description.utf8)
        let alphabet = Array("()[]?:,->#\n abcXYZ_.string".utf8)
        var parsed = 0
        var rejected = 0
        for _ in 0..<2000 {
            var input = seed
            for _ in 0..<(1 + generator.next() % 3) {
                let position = Int(generator.next() % UInt64(input.count))
                let byte = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                if generator.next() % 2 == 0 { input[position] = byte } else { input.insert(byte, at: position) }
            }
            do {
                let interface = try VarlinkInterface(parsing: String(decoding: input, as: UTF8.self))
                #expect(!interface.name.isEmpty)
                parsed += 1
            } catch {
                #expect(error.line >= 1 && error.column >= 1)
                rejected += 1
            }
        }
        #expect(parsed + rejected == 2000)
        #expect(rejected > 0)
    }

    @Test func beaconInterfacesParse() throws {
        #expect(!BeaconInterfaces.all.isEmpty)
        for (name, description) in BeaconInterfaces.all {
            let interface = try VarlinkInterface(parsing: description)
            #expect(interface.name == name)
        }
    }

    /// The certification interface shipped with the Python `varlink` package, found through the interpreter in
    /// `BEACON_TEST_PYTHON`.
    @Test(.enabled(if: certificationIDLPath() != nil, "BEACON_TEST_PYTHON with the varlink package is not set"))
    func certificationInterface() throws {
        let text = try String(contentsOfFile: certificationIDLPath()!, encoding: .utf8)
        let interface = try VarlinkInterface(parsing: text)
        #expect(interface.name == "org.varlink.certification")
        #expect(interface.methods.count == 13)
        #expect(interface.methods.first?.name == "Start")
        #expect(interface.errors.map(\.name) == ["ClientIdError", "CertificationError"])
        let myType = try #require(interface.type(named: "MyType"))
        guard case .structure(let fields) = myType.type else {
            Issue.record("MyType is not a struct")
            return
        }
        #expect(fields.first { $0.name == "stringset" }?.type == .dictionary(.structure([])))
        #expect(
            fields.first { $0.name == "nullable_array_struct" }?.type.description == "?[](first: int, second: string)")
        let foo = interface.type(named: "Interface").flatMap { definition -> VarlinkType? in
            if case .structure(let fields) = definition.type { return fields.first?.type }
            return nil
        }
        #expect(foo == .optional(.array(.optional(.dictionary(.enumeration(["foo", "bar", "baz"]))))))
        #expect(interface.missingParameter(method: "Test02", in: ["client_id": "x"]) == "bool")
        #expect(interface.invalidParameter(method: "Test02", in: ["client_id": "x", "bool": 1]) == "bool")
    }
}

private func certificationIDLPath() -> String? {
    guard let python = ProcessInfo.processInfo.environment["BEACON_TEST_PYTHON"], !python.isEmpty else { return nil }
    let script = "import os, varlink; print(os.path.dirname(varlink.__file__))"
    guard let output = try? runProcess(python, ["-c", script], input: []) else { return nil }
    let directory = output.trimmingCharacters(in: .whitespacesAndNewlines)
    let path = directory + "/tests/org.varlink.certification.varlink"
    return FileManager.default.fileExists(atPath: path) ? path : nil
}

extension JSONValue {
    fileprivate mutating func setMember(_ key: String, to value: JSONValue) {
        if case .object(var members) = self {
            members[key] = value
            self = .object(members)
        }
    }
}
