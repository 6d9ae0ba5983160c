import BeaconTestSupport
import Foundation
import Testing
import Varlink
import VarlinkCodeGeneration

/// The code generated from `org.varlink.certification.varlink`, in process: values to JSON and back, decoding
/// errors that name where, the interface's errors, and the generator's names.
@Suite("generated code")
struct GeneratedCodeTests {
    /// Every kind of member: an object, an enum, a struct, an array, a map, a set, nested anonymous types and a nil
    /// optional.
    static let myType = Certification.MyType(
        object: ["list": [1, 2.5, "three"], "nested": ["empty": [:]]],
        enum: .two,
        struct: .init(first: -7, second: "second"),
        array: ["a", "b"],
        dictionary: ["key": "value", "other": ""],
        stringset: ["one", "two", "three"],
        interface: .init(
            foo: [nil, ["foo": .foo, "bar": .bar], nil, ["one": .foo, "two": .bar]], anon: .init(foo: false, bar: true))
    )

    @Test("a struct with nested anonymous types, optionals, sets and maps goes to JSON and back unchanged")
    func roundTrip() throws {
        let value = Self.myType
        let json = value.varlinkValue
        #expect(try Certification.MyType(varlinkValue: json, path: "mytype") == value)
        // nil optionals are left out; a set is an object of empty objects.
        #expect(json["nullable"] == nil)
        #expect(json["stringset"] == ["one": [:], "two": [:], "three": [:]])
        #expect(json["enum"] == "two")
        #expect(json["interface"]?["foo"] == [nil, ["foo": "foo", "bar": "bar"], nil, ["one": "foo", "two": "bar"]])
        // null and absent are the same for an optional member.
        var members = value.varlinkMembers
        members["nullable"] = .null
        #expect(try Certification.MyType(varlinkMembers: members, path: "") == value)
    }

    @Test("a value of the wrong type is an error naming where it was and what was expected")
    func decodingErrors() throws {
        var members = Self.myType.varlinkMembers
        members["struct"] = ["first": "one", "second": "2"]
        #expect(throws: VarlinkDecodingError(path: "mytype.struct.first", expected: "int")) {
            _ = try Certification.MyType(varlinkValue: .object(members), path: "mytype")
        }
        members = Self.myType.varlinkMembers
        members["enum"] = "four"
        #expect(throws: VarlinkDecodingError(path: "enum", expected: "one of one, two, three")) {
            _ = try Certification.MyType(varlinkMembers: members, path: "")
        }
        members["enum"] = nil
        #expect(throws: VarlinkDecodingError(path: "enum", expected: "one of one, two, three")) {
            _ = try Certification.MyType(varlinkMembers: members, path: "")
        }
        // An object is any JSON value, null included; only an absent one is refused.
        members = Self.myType.varlinkMembers
        members["object"] = .null
        #expect(try Certification.MyType(varlinkMembers: members, path: "").object == .null)
        members["object"] = nil
        #expect(throws: VarlinkDecodingError(path: "object", expected: "object")) {
            _ = try Certification.MyType(varlinkMembers: members, path: "")
        }
        #expect(VarlinkDecodingError(path: "mytype.struct.first", expected: "int").parameter == "mytype")
        #expect(VarlinkDecodingError(path: "list[2].name", expected: "int").parameter == "list")
        // 1.0 is an int; 1.5 is not.
        #expect(throws: Never.self) {
            try Certification.Test03.Parameters(varlinkMembers: ["client_id": "x", "int": 1.0], path: "")
        }
        #expect(throws: VarlinkDecodingError.self) {
            try Certification.Test03.Parameters(varlinkMembers: ["client_id": "x", "int": 1.5], path: "")
        }
    }

    @Test("the interface's errors from and to varlink error replies")
    func errors() {
        #expect(Certification.Error(VarlinkError(name: "org.varlink.certification.ClientIdError")) == .clientIdError)
        let failure = VarlinkError(
            name: "org.varlink.certification.CertificationError", parameters: ["wants": ["a": 1], "got": "b"])
        #expect(Certification.Error(failure) == .certificationError(.init(wants: ["a": 1], got: "b")))
        #expect(Certification.Error.certificationError(.init(wants: ["a": 1], got: "b")).varlinkError == failure)
        // Another interface's error, or one whose parameters do not fit, is not the interface's.
        #expect(Certification.Error(VarlinkError(name: "org.varlink.service.MethodNotFound")) == nil)
        #expect(Certification.Error(VarlinkError(name: "org.varlink.certification.CertificationError")) == nil)
    }

    @Test("the description served is the file's text, and the modes come from @mode lines")
    func descriptionAndModes() throws {
        let interface = try VarlinkInterface(parsing: Certification.description)
        #expect(interface.name == Certification.name)
        #expect(Certification.Test10.mode == .stream)
        #expect(Certification.Test11.mode == .oneway)
        #expect(Certification.Test01.mode == .call)
        #expect(Certification.Test01.method == "org.varlink.certification.Test01")
        #expect(Certification.Test01.staticMethod.description == Certification.Test01.method)
        #expect(Certification.ClientIdError.name == "org.varlink.certification.ClientIdError")
        #expect(Certification.CertificationError.name == "org.varlink.certification.CertificationError")
    }

    @Test("names: snake_case to camelCase, keywords escaped, the namespace from the interface's last component")
    func names() throws {
        let interface = try VarlinkInterface(
            parsing: """
                interface io.example.some-thing
                type Type (in: int, UUIDString: string, default: ?(a, b))
                method Client() -> ()
                error Error ()
                """)
        let generator = SwiftGenerator(access: .package)
        #expect(generator.namespace(of: interface) == "SomeThing")
        let text = generator.generate(interface, source: "x.varlink")
        #expect(text.contains("package struct Type_: VarlinkStruct, Swift.Hashable"))
        #expect(text.contains("package var `in`: Swift.Int"))
        #expect(text.contains("package var uuidString: Swift.String"))
        #expect(text.contains("package var `default`: Default?"))
        // The interface declares Client and Error: the generated client and error type step aside.
        #expect(text.contains("package struct InterfaceClient: Swift.Sendable"))
        #expect(text.contains("package enum InterfaceError: VarlinkInterfaceError"))
        #expect(!text.contains("public "))
        #expect(SwiftGenerator(namespaces: ["io.example.some-thing": "Other"]).namespace(of: interface) == "Other")

        // Names only: the constants and the handlers' protocol; none of the types, the client or the service.
        let names = SwiftGenerator(output: .names).generate(interface, source: "x.varlink")
        #expect(names.contains("public enum Client {"))
        #expect(names.contains("public static let method = \"io.example.some-thing.Client\""))
        #expect(names.contains("public static let mode = VarlinkMethodMode.call"))
        #expect(names.contains("public static let name = \"io.example.some-thing.Error\""))
        #expect(names.contains("public protocol Handlers: AnyObject, SendableMetatype {"))
        #expect(names.contains("func client(_ parameters: Parameters, client: Client) throws(VarlinkError)"))
        #expect(names.contains("public static func handlers<H: Handlers>(_ type: H.Type = H.self)"))
        #expect(!names.contains("struct") && !names.contains("Service") && !names.contains("dispatch"))
    }

    @Test("extensions: what the names lack, as extensions of them in another module, and none of the names again")
    func extensions() throws {
        let interface = try VarlinkInterface(
            parsing: """
                interface io.example.shop
                type Item (name: string)
                type Size (small, large)
                method Buy(item: Item) -> (total: int)
                error SoldOut (item: string)
                error Closed ()
                """)
        let generator = SwiftGenerator(output: .extensions, imports: ["ShopNames"])
        let text = generator.generate(interface, source: "io.example.shop.varlink")
        #expect(text.contains("import Varlink\nimport ShopNames\n"))
        #expect(text.contains("extension Shop {"))
        #expect(text.contains("public struct Item: VarlinkStruct, Swift.Hashable"))
        #expect(text.contains("public struct Client: Swift.Sendable"))
        #expect(text.contains("public protocol Service: AnyObject"))
        // A method's and an error's parameters go in extensions of the enums the names declared.
        #expect(text.contains("extension Shop.Buy {\n"))
        #expect(text.contains("public typealias Call = VarlinkMethodCall<Parameters, Reply, Shop.Error>"))
        #expect(text.contains("extension Shop.SoldOut {\n"))
        #expect(text.contains("case soldOut(SoldOut.Parameters)"))
        #expect(text.contains("case closed\n"))
        #expect(!text.contains("extension Shop.Closed"))
        // The names are not declared again.
        #expect(!text.contains("static let name") && !text.contains("static let method"))
        #expect(!text.contains("static let description") && !text.contains("enum Shop"))
        // An enum type is one of the names.
        #expect(!text.contains("enum Size"))
        let names = SwiftGenerator(output: .names).generate(interface, source: "io.example.shop.varlink")
        #expect(names.contains("public enum Size: Swift.String, VarlinkValue, Swift.CaseIterable, Swift.Hashable {"))
        #expect(names.contains("case small = \"small\""))
        #expect(!names.contains("struct Item"))
    }
}

/// `varlink-swift-generator`, as the build plugin runs it.
@Suite("varlink-swift-generator")
struct GeneratorToolTests {
    @Test("writes NAME.swift for NAME.varlink; a file that does not parse is an error at its line and column")
    func tool() throws {
        let tool = try BuiltProducts.path("varlink-swift-generator", override: "VARLINK_SWIFT_GENERATOR_PATH")
        let directory = try makeTemporaryDirectory("varlink-generator")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = directory + "/org.example.ping.varlink"
        try "interface org.example.ping\nmethod Ping(text: string) -> (text: string)\n".write(
            toFile: good, atomically: true, encoding: .utf8)
        let run = try ChildProcess(tool, ["--access", "internal", "--output", directory, good], error: .capture)
        #expect(run.wait() == 0)
        let generated = try String(contentsOfFile: directory + "/org.example.ping.swift", encoding: .utf8)
        #expect(generated.contains("internal enum Ping: VarlinkGeneratedInterface"))
        #expect(generated.contains("internal func ping(text: Swift.String) async throws -> Ping.Reply"))

        let bad = directory + "/org.example.bad.varlink"
        try "interface org.example.bad\nmethod Ping(text: strung) -> ()\n".write(
            toFile: bad, atomically: true, encoding: .utf8)
        let failed = try ChildProcess(tool, ["--output", directory, bad], error: .capture)
        #expect(failed.wait() == 1)
        let message = String(decoding: failed.readError(), as: UTF8.self)
        #expect(message.contains("org.example.bad.varlink:2:"), "\(message)")
        #expect(message.contains("error:"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/org.example.bad.swift"))

        let misused = try ChildProcess(tool, ["--access", "open", "--output", directory, good], error: .capture)
        #expect(misused.wait() == 2)
    }
}
