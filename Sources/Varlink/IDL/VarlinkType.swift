/// A type in a varlink interface description.
public indirect enum VarlinkType: Sendable, Hashable, CustomStringConvertible {
    case bool
    case int
    case float
    case string
    /// `object`: a value of unspecified structure.
    case object
    /// A type defined with `type Name …` in the same interface.
    case named(String)
    /// `[]T`
    case array(VarlinkType)
    /// `[string]T`; `[string]()` is a set of strings.
    case dictionary(VarlinkType)
    /// `?T`: the value may be absent or `null`.
    case optional(VarlinkType)
    /// `(name: T, …)`
    case structure([VarlinkField])
    /// `(a, b, c)`
    case enumeration([String])

    /// The type in IDL notation.
    public var description: String {
        switch self {
        case .bool: return "bool"
        case .int: return "int"
        case .float: return "float"
        case .string: return "string"
        case .object: return "object"
        case .named(let name): return name
        case .array(let element): return "[]\(element)"
        case .dictionary(let element): return "[string]\(element)"
        case .optional(let wrapped): return "?\(wrapped)"
        case .structure(let fields): return "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .enumeration(let cases): return "(" + cases.joined(separator: ", ") + ")"
        }
    }

    /// Whether the type is `?T`.
    public var isOptional: Bool {
        if case .optional = self { return true }
        return false
    }
}

/// A named, typed member of a struct, method input or output, or error.
public struct VarlinkField: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var type: VarlinkType

    public init(name: String, type: VarlinkType) {
        self.name = name
        self.type = type
    }

    public var description: String { "\(name): \(type)" }
}

/// `method Name(input) -> (output)`
public struct VarlinkMethod: Sendable, Hashable {
    public var name: String
    public var input: [VarlinkField]
    public var output: [VarlinkField]
    /// The comment lines right above the method, without `#`.
    public var documentation: String

    public init(name: String, input: [VarlinkField], output: [VarlinkField], documentation: String = "") {
        self.name = name
        self.input = input
        self.output = output
        self.documentation = documentation
    }
}

/// `type Name (…)`
public struct VarlinkTypeDefinition: Sendable, Hashable {
    public var name: String
    /// A ``VarlinkType/structure(_:)`` or ``VarlinkType/enumeration(_:)``.
    public var type: VarlinkType
    public var documentation: String

    public init(name: String, type: VarlinkType, documentation: String = "") {
        self.name = name
        self.type = type
        self.documentation = documentation
    }
}

/// `error Name (…)`
public struct VarlinkErrorDefinition: Sendable, Hashable {
    public var name: String
    public var parameters: [VarlinkField]
    public var documentation: String

    public init(name: String, parameters: [VarlinkField], documentation: String = "") {
        self.name = name
        self.parameters = parameters
        self.documentation = documentation
    }
}

/// Why an interface description was rejected, with its 1-based line and column.
public struct VarlinkIDLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var reason: String

    public init(line: Int, column: Int, reason: String) {
        self.line = line
        self.column = column
        self.reason = reason
    }

    public var description: String { "interface description, line \(line), column \(column): \(reason)" }
}
