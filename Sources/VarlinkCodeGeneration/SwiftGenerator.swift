import Varlink

/// Writes the Swift for one varlink interface: its types, errors, a typed client and a service protocol with its
/// dispatch.
///
/// Streaming is not in the varlink grammar. A method's documentation may say how it is called, on a line of its
/// own: `@mode stream` (called with `"more": true`: the client gets an `AsyncThrowingStream` of replies, and the
/// dispatch answers a call without `more` with `org.varlink.service.ExpectedMore`), `@mode oneway` (the client
/// sends it with `"oneway": true` and waits for no reply) or `@mode upgrade` (generated as a plain call).
public struct SwiftGenerator: Sendable {
    /// The access level of what is generated.
    public enum Access: String, Sendable, CaseIterable {
        case `public`, `package`, `internal`
    }

    /// How a method is called.
    public typealias Mode = VarlinkMethodMode

    /// What is generated.
    public enum Output: String, Sendable, CaseIterable {
        /// Everything: types, errors, the client, the service and its dispatch.
        case all
        /// Only the names: the interface's name and description, per method its qualified name and mode, per
        /// error its qualified name, and its enum types (closed sets of names); and a `Handlers` protocol, a function per method that code of its own answers
        /// with, and the table of the methods (`handlers(_:)`). For a program that serves or calls with code of its
        /// own and should not carry the rest (a daemon that cares for its memory).
        case names
        /// What ``all`` adds to ``names``, as extensions of the namespaces that ``names`` declared in another module
        /// (named in ``imports``): the types, each method's `Parameters`, `Reply` and `Call`, each error's
        /// `Parameters`, the error enum, the client and the service. A program that calls the interface this way
        /// shares the names with one that carries only them.
        case extensions
    }

    public var access: Access
    /// The Swift name of each interface's namespace, by interface name; others get their last component
    /// (`org.varlink.certification` → `Certification`).
    public var namespaces: [String: String]
    public var output: Output
    /// Modules the generated file imports besides `Varlink`: with ``Output/extensions``, the one that holds the
    /// names.
    public var imports: [String]

    public init(
        access: Access = .public, namespaces: [String: String] = [:], output: Output = .all, imports: [String] = []
    ) {
        self.access = access
        self.namespaces = namespaces
        self.output = output
        self.imports = imports
    }

    /// The namespace the interface's declarations go in.
    public func namespace(of interface: VarlinkInterface) -> String {
        if let chosen = namespaces[interface.name] { return chosen }
        return SwiftNames.typeName(String(interface.name.split(separator: ".").last ?? "Interface"))
    }

    /// The mode `@mode` in `documentation` gives, else ``Mode/call``.
    public static func mode(of documentation: String) -> Mode {
        for line in documentation.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, words[0] == "@mode", let mode = Mode(rawValue: String(words[1])) { return mode }
        }
        return .call
    }

    /// The Swift source for `interface`, parsed from `source` (named in the header).
    public func generate(_ interface: VarlinkInterface, source: String) -> String {
        var file = InterfaceWriter(
            interface: interface, namespace: namespace(of: interface), access: access.rawValue, imports: imports)
        switch output {
        case .all: return file.write(source: source)
        case .names: return file.writeNames(source: source)
        case .extensions: return file.writeExtensions(source: source)
        }
    }
}

/// The text of one generated file.
private struct InterfaceWriter {
    let interface: VarlinkInterface
    let namespace: String
    let access: String
    let imports: [String]
    /// Writing ``SwiftGenerator/Output/extensions``: an error's parameters are its `Parameters`, not the error's
    /// own type (which the names declared as an enum).
    var extending = false
    var lines: [String] = []
    /// Names already taken at the namespace's level.
    let members: Set<String>
    let errorType: String
    let clientType: String
    let serviceType: String
    let handlersType: String

    init(interface: VarlinkInterface, namespace: String, access: String, imports: [String]) {
        self.interface = interface
        self.namespace = namespace
        self.access = access
        self.imports = imports
        var taken = Set(interface.types.map { SwiftNames.typeName($0.name) })
        taken.formUnion(interface.methods.map { SwiftNames.typeName($0.name) })
        taken.formUnion(interface.errors.map { SwiftNames.typeName($0.name) })
        members = taken
        func free(_ name: String) -> String { taken.contains(name) ? "Interface" + name : name }
        errorType = free("Error")
        clientType = free("Client")
        serviceType = free("Service")
        handlersType = free("Handlers")
    }

    mutating func write(source: String) -> String {
        opening(source: source)
        types()
        for method in interface.methods { self.method(method) }
        errors()
        client()
        service()
        line(0, "}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The file's header: where it comes from, and its imports.
    mutating func header(source: String) {
        line(0, "// Generated by VarlinkGenerator from \(source). Do not edit.")
        line(0, "")
        line(0, "import Varlink")
        for module in imports { line(0, "import \(module)") }
        line(0, "")
    }

    /// The file's header and the namespace's opening, with the interface's name and description.
    mutating func opening(source: String) {
        header(source: source)
        documentation(0, interface.documentation)
        line(0, "\(access) enum \(namespace): VarlinkGeneratedInterface {")
        line(1, "/// The interface's name.")
        line(1, "\(access) static let name = \(SwiftNames.stringLiteral(interface.name))")
        line(1, "/// The interface description, as served by `org.varlink.service.GetInterfaceDescription`.")
        line(1, "\(access) static let description = \(SwiftNames.stringLiteral(interface.text))")
    }

    /// The names only (``SwiftGenerator/Output/names``).
    mutating func writeNames(source: String) -> String {
        opening(source: source + " (names only)")
        for method in interface.methods {
            line(0, "")
            documentation(1, method.documentation)
            line(1, "\(access) enum \(SwiftNames.typeName(method.name)) {")
            methodConstants(method)
            line(1, "}")
        }
        for error in interface.errors {
            line(0, "")
            documentation(1, error.documentation)
            line(1, "\(access) enum \(SwiftNames.typeName(error.name)) {")
            line(2, "/// The error's qualified name.")
            line(2, "\(access) static let name = \(SwiftNames.stringLiteral(interface.name + "." + error.name))")
            line(1, "}")
        }
        // An enum type is a closed set of names: it is written with them, so that both sides share it.
        for type in interface.types {
            guard case .enumeration(let cases) = type.type else { continue }
            line(0, "")
            enumeration(1, SwiftNames.typeName(type.name), cases, type.documentation)
        }
        handlers()
        line(0, "}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// With the names: a protocol of the functions that answer the methods with code of their own, given the
    /// call's parameters and its client as the server represents them, and the table of the methods.
    mutating func handlers() {
        func function(_ method: VarlinkMethod) -> String { SwiftNames.identifier(SwiftNames.lowerCamel(method.name)) }
        line(0, "")
        line(1, "/// What answers the interface's calls with code of its own: a function per method, given the call's")
        line(1, "/// parameters and its client as the server represents them. ``handlers(_:)`` lists them.")
        line(1, "\(access) protocol \(handlersType): AnyObject, SendableMetatype {")
        line(2, "/// A call's parameters, as the server reads them.")
        line(2, "associatedtype Parameters")
        line(2, "/// The caller: the server's state of its connection.")
        line(2, "associatedtype Client")
        for method in interface.methods {
            line(0, "")
            documentation(2, method.documentation)
            line(2, "func \(function(method))(_ parameters: Parameters, client: Client) throws(VarlinkError)")
        }
        line(1, "}")
        line(0, "")
        line(
            1,
            "/// Every method of the interface: its qualified name, its mode, and the function of `H` that answers it.")
        line(1, "\(access) static func handlers<H: \(handlersType)>(_ type: H.Type = H.self) -> [(")
        line(2, "method: Swift.String, mode: VarlinkMethodMode,")
        line(2, "handle: @Sendable (H, H.Parameters, H.Client) throws(VarlinkError) -> Swift.Void")
        line(1, ")] {")
        line(2, "[")
        for method in interface.methods {
            let name = SwiftNames.typeName(method.name)
            line(3, "(")
            line(4, "\(name).method, \(name).mode,")
            line(4, "{ (service: H, parameters: H.Parameters, client: H.Client) throws(VarlinkError) in")
            line(5, "try service.\(function(method))(parameters, client: client)")
            line(4, "}")
            line(3, "),")
        }
        line(2, "]")
        line(1, "}")
    }

    /// The interface's types, in the namespace.
    mutating func types() {
        for type in interface.types {
            line(0, "")
            switch type.type {
            case .enumeration(let cases):
                // The names declared it (``writeNames(source:)``).
                if !extending { enumeration(1, SwiftNames.typeName(type.name), cases, type.documentation) }
            case .structure(let fields):
                structure(1, SwiftNames.typeName(type.name), fields, type.documentation)
            default:
                break
            }
        }
    }

    /// What ``write(source:)`` adds to ``writeNames(source:)``, as extensions (``SwiftGenerator/Output/extensions``).
    mutating func writeExtensions(source: String) -> String {
        extending = true
        header(source: source + " (extending its names)")
        line(0, "extension \(namespace) {")
        types()
        errors()
        client()
        service()
        line(0, "}")
        for method in interface.methods {
            let name = SwiftNames.typeName(method.name)
            line(0, "")
            line(0, "extension \(namespace).\(name) {")
            structure(1, "Parameters", method.input, "The call's parameters.")
            line(0, "")
            structure(1, "Reply", method.output, "The reply's parameters.")
            line(0, "")
            line(1, "/// A call as a service receives it.")
            line(1, "\(access) typealias Call = VarlinkMethodCall<Parameters, Reply, \(namespace).\(errorType)>")
            line(0, "}")
        }
        for error in interface.errors where !error.parameters.isEmpty {
            line(0, "")
            line(0, "extension \(namespace).\(SwiftNames.typeName(error.name)) {")
            structure(1, "Parameters", error.parameters, "The parameters of \(error.name).")
            line(0, "}")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Text

    mutating func line(_ depth: Int, _ text: String) {
        lines.append(text.isEmpty ? "" : String(repeating: "    ", count: depth) + text)
    }

    mutating func documentation(_ depth: Int, _ text: String) {
        let kept = text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("@mode ") }
        var trimmed = kept[...]
        while let first = trimmed.first, first.allSatisfy(\.isWhitespace) { trimmed = trimmed.dropFirst() }
        while let last = trimmed.last, last.allSatisfy(\.isWhitespace) { trimmed = trimmed.dropLast() }
        for text in trimmed {
            let content = text.first == " " ? text.dropFirst() : text[...]
            line(depth, content.isEmpty ? "///" : "/// " + content)
        }
    }

    // MARK: Types

    /// The Swift type of `type`; anonymous structs and enums become types named `nested` (written with `qualifier`
    /// before it), to be declared from `nestedTypes`.
    func swiftType(
        _ type: VarlinkType, nested: String, qualifier: String = "", nestedTypes: inout [(String, VarlinkType)]
    ) -> String {
        func inner(_ type: VarlinkType) -> String {
            swiftType(type, nested: nested, qualifier: qualifier, nestedTypes: &nestedTypes)
        }
        switch type {
        case .bool: return "Swift.Bool"
        case .int: return "Swift.Int"
        case .float: return "Swift.Double"
        case .string: return "Swift.String"
        case .object: return "JSONValue"
        case .named(let name): return namespace + "." + SwiftNames.typeName(name)
        case .array(let element): return "[" + inner(element) + "]"
        case .dictionary(.structure(let fields)) where fields.isEmpty: return "Swift.Set<Swift.String>"
        case .dictionary(.enumeration(let cases)) where cases.isEmpty: return "Swift.Set<Swift.String>"
        case .dictionary(let element):
            return "[Swift.String: " + inner(element) + "]"
        case .optional(let wrapped): return inner(wrapped) + "?"
        case .structure, .enumeration:
            nestedTypes.append((nested, type))
            return qualifier + nested
        }
    }

    mutating func structure(
        _ depth: Int, _ name: String, _ fields: [VarlinkField], _ doc: String, constants: [String] = []
    ) {
        documentation(depth, doc)
        line(depth, "\(access) struct \(name): VarlinkStruct, Swift.Hashable {")
        for constant in constants { line(depth + 1, constant) }
        if !constants.isEmpty { line(0, "") }
        var nestedTypes: [(String, VarlinkType)] = []
        var properties: [(wire: String, swift: String, type: String)] = []
        for field in fields {
            let type = swiftType(field.type, nested: SwiftNames.typeName(field.name), nestedTypes: &nestedTypes)
            properties.append((field.name, SwiftNames.identifier(SwiftNames.lowerCamel(field.name)), type))
        }
        for property in properties {
            line(depth + 1, "\(access) var \(property.swift): \(property.type)")
        }
        if !properties.isEmpty { line(0, "") }
        let arguments = properties.map { "\($0.swift): \($0.type)" + ($0.type.hasSuffix("?") ? " = nil" : "") }
        line(depth + 1, "\(access) init(\(arguments.joined(separator: ", "))) {")
        for property in properties { line(depth + 2, "self.\(property.swift) = \(property.swift)") }
        line(depth + 1, "}")
        line(0, "")
        line(
            depth + 1,
            "\(access) init(varlinkMembers members: [Swift.String: JSONValue], path: Swift.String) throws(VarlinkDecodingError) {"
        )
        for property in properties {
            line(
                depth + 2,
                "\(property.swift) = try members.varlinkMember(\(SwiftNames.stringLiteral(property.wire)), path: path)")
        }
        line(depth + 1, "}")
        line(0, "")
        line(depth + 1, "\(access) var varlinkMembers: [Swift.String: JSONValue] {")
        if properties.isEmpty {
            line(depth + 2, "[:]")
        } else {
            line(depth + 2, "var members: [Swift.String: JSONValue] = [:]")
            for property in properties {
                line(
                    depth + 2, "members.setVarlinkMember(\(SwiftNames.stringLiteral(property.wire)), \(property.swift))"
                )
            }
            line(depth + 2, "return members")
        }
        line(depth + 1, "}")
        nestedDeclarations(depth + 1, nestedTypes)
        line(depth, "}")
    }

    mutating func nestedDeclarations(_ depth: Int, _ nestedTypes: [(String, VarlinkType)]) {
        for (name, type) in nestedTypes {
            line(0, "")
            switch type {
            case .structure(let fields): structure(depth, name, fields, "")
            case .enumeration(let cases): enumeration(depth, name, cases, "")
            default: break
            }
        }
    }

    mutating func enumeration(_ depth: Int, _ name: String, _ cases: [String], _ doc: String) {
        documentation(depth, doc)
        line(depth, "\(access) enum \(name): Swift.String, VarlinkValue, Swift.CaseIterable, Swift.Hashable {")
        for value in cases {
            line(
                depth + 1,
                "case \(SwiftNames.identifier(SwiftNames.lowerCamel(value))) = \(SwiftNames.stringLiteral(value))")
        }
        line(0, "")
        line(
            depth + 1,
            "\(access) init(varlinkValue value: JSONValue, path: Swift.String) throws(VarlinkDecodingError) {")
        line(depth + 2, "guard case .string(let text) = value, let known = Self(rawValue: text) else {")
        line(
            depth + 3,
            "throw VarlinkDecodingError(path: path, expected: \(SwiftNames.stringLiteral("one of " + cases.joined(separator: ", "))))"
        )
        line(depth + 2, "}")
        line(depth + 2, "self = known")
        line(depth + 1, "}")
        line(0, "")
        line(depth + 1, "\(access) var varlinkValue: JSONValue { .string(rawValue) }")
        line(depth, "}")
    }

    // MARK: Methods

    mutating func method(_ method: VarlinkMethod) {
        let name = SwiftNames.typeName(method.name)
        line(0, "")
        documentation(1, method.documentation)
        line(1, "\(access) enum \(name) {")
        methodConstants(method)
        line(0, "")
        structure(2, "Parameters", method.input, "The call's parameters.")
        line(0, "")
        structure(2, "Reply", method.output, "The reply's parameters.")
        line(0, "")
        line(2, "/// A call as a service receives it.")
        line(2, "\(access) typealias Call = VarlinkMethodCall<Parameters, Reply, \(namespace).\(errorType)>")
        line(1, "}")
    }

    /// A method's qualified name, as a string and a static string, and its mode.
    mutating func methodConstants(_ method: VarlinkMethod) {
        let qualified = SwiftNames.stringLiteral(interface.name + "." + method.name)
        let mode = SwiftGenerator.mode(of: method.documentation).rawValue
        line(2, "/// The method's qualified name.")
        line(2, "\(access) static let method = \(qualified)")
        line(2, "/// The method's qualified name as a static string, for comparisons that read a call in place.")
        if access != "internal" { line(2, "@inlinable") }
        line(2, "\(access) static var staticMethod: Swift.StaticString { \(qualified) }")
        line(2, "/// How the method is called.")
        line(2, "\(access) static let mode = VarlinkMethodMode.\(mode)")
    }

    // MARK: Errors

    mutating func errors() {
        for error in interface.errors where !extending {
            line(0, "")
            structure(
                1, SwiftNames.typeName(error.name), error.parameters, "The parameters of \(error.name).",
                constants: [
                    "/// The error's qualified name.",
                    "\(access) static let name = \(SwiftNames.stringLiteral(interface.name + "." + error.name))",
                ])
        }
        line(0, "")
        line(1, "/// The interface's errors.")
        line(1, "\(access) enum \(errorType): VarlinkInterfaceError, Swift.Hashable {")
        for error in interface.errors {
            documentation(2, error.documentation)
            let caseName = SwiftNames.identifier(SwiftNames.lowerCamel(error.name))
            line(2, "case \(caseName)" + (error.parameters.isEmpty ? "" : "(\(errorParameters(error)))"))
        }
        line(0, "")
        line(2, "\(access) init?(_ error: VarlinkError) {")
        if interface.errors.isEmpty {
            line(3, "return nil")
        } else {
            line(3, "switch error.name {")
            for error in interface.errors {
                let caseName = SwiftNames.identifier(SwiftNames.lowerCamel(error.name))
                line(3, "case \(SwiftNames.stringLiteral(interface.name + "." + error.name)):")
                if error.parameters.isEmpty {
                    line(4, "self = .\(caseName)")
                } else {
                    line(4, "guard")
                    line(
                        5,
                        "let parameters = try? \(errorParameters(error))(varlinkMembers: error.parameters, path: \"\")"
                    )
                    line(4, "else { return nil }")
                    line(4, "self = .\(caseName)(parameters)")
                }
            }
            line(3, "default:")
            line(4, "return nil")
            line(3, "}")
        }
        line(2, "}")
        line(0, "")
        line(2, "\(access) var varlinkError: VarlinkError {")
        if interface.errors.isEmpty {
            line(3, "switch self {}")
        } else {
            line(3, "switch self {")
            for error in interface.errors {
                let caseName = SwiftNames.identifier(SwiftNames.lowerCamel(error.name))
                let qualified = SwiftNames.stringLiteral(interface.name + "." + error.name)
                if error.parameters.isEmpty {
                    line(3, "case .\(caseName): return VarlinkError(name: \(qualified))")
                } else {
                    line(3, "case .\(caseName)(let parameters):")
                    line(4, "return VarlinkError(name: \(qualified), parameters: parameters.varlinkMembers)")
                }
            }
            line(3, "}")
        }
        line(2, "}")
        line(1, "}")
    }

    /// The type of an error's parameters: the error's own type, or its `Parameters` when extending the names.
    func errorParameters(_ error: VarlinkErrorDefinition) -> String {
        SwiftNames.typeName(error.name) + (extending ? ".Parameters" : "")
    }

    // MARK: Client

    /// The arguments of a method's call function (its parameters, optional ones defaulting to `nil`), and the
    /// construction of its parameters from them.
    func arguments(_ method: VarlinkMethod) -> (declaration: String, construction: String) {
        var unused: [(String, VarlinkType)] = []
        var declared: [String] = []
        var passed: [String] = []
        let parameters = "\(SwiftNames.typeName(method.name)).Parameters"
        for field in method.input {
            let swift = SwiftNames.identifier(SwiftNames.lowerCamel(field.name))
            let type = swiftType(
                field.type, nested: SwiftNames.typeName(field.name), qualifier: parameters + ".", nestedTypes: &unused)
            declared.append("\(swift): \(type)" + (type.hasSuffix("?") ? " = nil" : ""))
            passed.append("\(SwiftNames.label(SwiftNames.lowerCamel(field.name))): \(swift)")
        }
        return (declared.joined(separator: ", "), "\(parameters)(\(passed.joined(separator: ", ")))")
    }

    mutating func client() {
        line(0, "")
        line(1, "/// The interface's methods, called through any varlink connection.")
        line(1, "\(access) struct \(clientType): Swift.Sendable {")
        line(2, "\(access) let caller: any VarlinkCaller")
        line(0, "")
        line(2, "\(access) init(_ caller: any VarlinkCaller) {")
        line(3, "self.caller = caller")
        line(2, "}")
        for method in interface.methods {
            let name = SwiftNames.typeName(method.name)
            let function = SwiftNames.identifier(SwiftNames.lowerCamel(method.name))
            let (declaration, construction) = arguments(method)
            line(0, "")
            documentation(2, method.documentation)
            switch SwiftGenerator.mode(of: method.documentation) {
            case .call, .upgrade:
                line(2, "\(access) func \(function)(\(declaration)) async throws -> \(name).Reply {")
                line(3, "let parameters = \(construction).varlinkMembers")
                line(3, "let reply: [Swift.String: JSONValue]")
                line(3, "do {")
                line(4, "reply = try await caller.call(method: \(name).method, parameters: parameters)")
                line(3, "} catch {")
                line(4, "throw caller.translate(error, to: \(namespace).\(errorType).self)")
                line(3, "}")
                line(3, "return try \(name).Reply(varlinkMembers: reply, path: \"\")")
                line(2, "}")
            case .stream:
                line(
                    2,
                    "\(access) func \(function)(\(declaration)) -> _Concurrency.AsyncThrowingStream<\(name).Reply, any Swift.Error> {"
                )
                line(
                    3, "let replies = caller.stream(method: \(name).method, parameters: \(construction).varlinkMembers)"
                )
                line(3, "let caller = caller")
                line(3, "return _Concurrency.AsyncThrowingStream { continuation in")
                line(4, "let task = _Concurrency.Task {")
                line(5, "do {")
                line(6, "for try await reply in replies {")
                line(7, "continuation.yield(try \(name).Reply(varlinkMembers: reply, path: \"\"))")
                line(6, "}")
                line(6, "continuation.finish()")
                line(5, "} catch {")
                line(6, "continuation.finish(throwing: caller.translate(error, to: \(namespace).\(errorType).self))")
                line(5, "}")
                line(4, "}")
                line(4, "continuation.onTermination = { _ in task.cancel() }")
                line(3, "}")
                line(2, "}")
            case .oneway:
                line(2, "\(access) func \(function)(\(declaration)) async throws {")
                line(3, "try await caller.send(method: \(name).method, parameters: \(construction).varlinkMembers)")
                line(2, "}")
            }
        }
        line(1, "}")
    }

    // MARK: Service

    mutating func service() {
        line(0, "")
        line(1, "/// What serves the interface: one function per method, each answering through its call.")
        line(1, "\(access) protocol \(serviceType): AnyObject {")
        for method in interface.methods {
            documentation(2, method.documentation)
            line(
                2,
                "func \(SwiftNames.identifier(SwiftNames.lowerCamel(method.name)))(_ call: \(SwiftNames.typeName(method.name)).Call)"
            )
        }
        line(1, "}")
        line(0, "")
        line(
            1,
            "/// Hands `call` to `service` with its parameters decoded, when it calls one of the interface's methods;")
        line(1, "/// returns false otherwise. Parameters of the wrong type are answered with")
        line(1, "/// `org.varlink.service.InvalidParameter`, a streamed method called without `more` with")
        line(1, "/// `org.varlink.service.ExpectedMore`.")
        line(
            1,
            "\(access) static func dispatch(_ call: VarlinkCall, to service: some \(serviceType), responder: any VarlinkResponder) -> Swift.Bool {"
        )
        line(2, "switch call.method {")
        for method in interface.methods {
            let name = SwiftNames.typeName(method.name)
            line(2, "case \(name).method:")
            if SwiftGenerator.mode(of: method.documentation) == .stream {
                line(3, "guard call.more else {")
                line(4, "if !call.oneway { responder.reply(error: .expectedMore()) }")
                line(4, "return true")
                line(3, "}")
            }
            line(3, "do throws(VarlinkDecodingError) {")
            line(4, "let parameters = try \(name).Parameters(varlinkMembers: call.parameters, path: \"\")")
            line(
                4,
                "service.\(SwiftNames.identifier(SwiftNames.lowerCamel(method.name)))(\(name).Call(parameters: parameters, more: call.more, oneway: call.oneway, responder: responder))"
            )
            line(3, "} catch {")
            line(4, "if !call.oneway { responder.reply(error: .invalidParameter(error.parameter)) }")
            line(3, "}")
        }
        line(2, "default:")
        line(3, "return false")
        line(2, "}")
        line(2, "return true")
        line(1, "}")
    }
}
