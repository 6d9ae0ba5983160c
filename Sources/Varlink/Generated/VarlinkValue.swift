/// A Swift value that stands for a varlink type: what code generated from a `.varlink` file is made of.
///
/// The varlink types map to `Bool` (`bool`), `Int` (`int`), `Double` (`float`), `String` (`string`), ``JSONValue``
/// (`object`), arrays (`[]T`), dictionaries keyed by `String` (`[string]T`), `Set<String>` (`[string]()`),
/// optionals (`?T`), and the structs and enums the generator writes for `type` declarations and anonymous types.
public protocol VarlinkValue: Sendable {
    /// The value `value` stands for. `path` names where it was found (`mytype.struct.first`), for the error.
    init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError)

    /// The value of a member that is absent at `path`: `nil` for an optional, else an error. By default the value
    /// `null` stands for; an `object`, which may hold `null`, refuses an absent member.
    init(varlinkAbsentAt path: String) throws(VarlinkDecodingError)

    /// The value as JSON.
    var varlinkValue: JSONValue { get }
}

/// A varlink value that was not of the type the interface declares.
public struct VarlinkDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the value was, as dotted member names from the top (`mytype.struct.first`, `list[2]`).
    public var path: String
    /// The varlink type expected there.
    public var expected: String

    public init(path: String, expected: String) {
        self.path = path
        self.expected = expected
    }

    /// The top-level member the value was in: the parameter an `InvalidParameter` error names.
    public var parameter: String {
        String(path.prefix { $0 != "." && $0 != "[" })
    }

    public var description: String { "\(path): expected \(expected)" }
}

extension Bool: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        guard case .bool(let flag) = value else { throw VarlinkDecodingError(path: path, expected: "bool") }
        self = flag
    }

    public var varlinkValue: JSONValue { .bool(self) }
}

extension Int: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        switch value {
        case .int(let number) where Int(exactly: number) != nil: self = Int(number)
        // A number written with a fraction or exponent whose value is whole, as some encoders write integers.
        case .double(let number) where Int(exactly: number) != nil: self = Int(number)
        default: throw VarlinkDecodingError(path: path, expected: "int")
        }
    }

    public var varlinkValue: JSONValue { .int(Int64(self)) }
}

extension Double: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        switch value {
        case .double(let number): self = number
        case .int(let number): self = Double(number)
        default: throw VarlinkDecodingError(path: path, expected: "float")
        }
    }

    public var varlinkValue: JSONValue { .double(self) }
}

extension String: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        guard case .string(let text) = value else { throw VarlinkDecodingError(path: path, expected: "string") }
        self = text
    }

    public var varlinkValue: JSONValue { .string(self) }
}

/// `object`: any JSON value but `null`, as it came (`?object` admits `null`, as `nil`).
extension VarlinkValue {
    public init(varlinkAbsentAt path: String) throws(VarlinkDecodingError) {
        try self.init(varlinkValue: .null, path: path)
    }
}

/// An `object`: any JSON value, `null` included. Only an absent member is refused.
extension JSONValue: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        self = value
    }

    public init(varlinkAbsentAt path: String) throws(VarlinkDecodingError) {
        throw VarlinkDecodingError(path: path, expected: "object")
    }

    public var varlinkValue: JSONValue { self }
}

extension Array: VarlinkValue where Element: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        guard case .array(let elements) = value else { throw VarlinkDecodingError(path: path, expected: "array") }
        var decoded: [Element] = []
        decoded.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            decoded.append(try Element(varlinkValue: element, path: "\(path)[\(index)]"))
        }
        self = decoded
    }

    public var varlinkValue: JSONValue { .array(map(\.varlinkValue)) }
}

extension Dictionary: VarlinkValue where Key == String, Value: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        guard case .object(let members) = value else {
            throw VarlinkDecodingError(path: path, expected: "[string] map")
        }
        var decoded: [String: Value] = [:]
        decoded.reserveCapacity(members.count)
        for (key, member) in members {
            decoded[key] = try Value(varlinkValue: member, path: path + "." + key)
        }
        self = decoded
    }

    public var varlinkValue: JSONValue { .object(mapValues(\.varlinkValue)) }
}

/// `[string]()`: a set of strings, an object whose members are empty objects.
extension Set: VarlinkValue where Element == String {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        guard case .object(let members) = value else {
            throw VarlinkDecodingError(path: path, expected: "[string]() set")
        }
        self = Set(members.keys)
    }

    public var varlinkValue: JSONValue {
        .object(Dictionary(uniqueKeysWithValues: map { ($0, JSONValue.object([:])) }))
    }
}

/// `?T`: absent or `null` is `nil`.
extension Optional: VarlinkValue where Wrapped: VarlinkValue {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        if case .null = value {
            self = nil
        } else {
            self = try Wrapped(varlinkValue: value, path: path)
        }
    }

    public var varlinkValue: JSONValue { self?.varlinkValue ?? .null }
}

/// A struct of named members: a `type` declaration's struct, a method's parameters or reply, an error's parameters.
public protocol VarlinkStruct: VarlinkValue {
    /// The struct from its members.
    init(varlinkMembers members: [String: JSONValue], path: String) throws(VarlinkDecodingError)

    /// The members, without the optional ones that are `nil`.
    var varlinkMembers: [String: JSONValue] { get }
}

extension VarlinkStruct {
    public init(varlinkValue value: JSONValue, path: String) throws(VarlinkDecodingError) {
        guard case .object(let members) = value else { throw VarlinkDecodingError(path: path, expected: "struct") }
        try self.init(varlinkMembers: members, path: path)
    }

    public var varlinkValue: JSONValue { .object(varlinkMembers) }
}

extension [String: JSONValue] {
    /// The member `name` as a `T`; an absent member is `nil` for an optional, and refused otherwise
    /// (``VarlinkValue/init(varlinkAbsentAt:)``).
    public func varlinkMember<T: VarlinkValue>(
        _ name: String, path: String, as type: T.Type = T.self
    ) throws(VarlinkDecodingError) -> T {
        let memberPath = path.isEmpty ? name : path + "." + name
        guard let value = self[name] else { return try T(varlinkAbsentAt: memberPath) }
        return try T(varlinkValue: value, path: memberPath)
    }

    /// Sets the member `name` to `value`, as it is: an `object` member may hold `null`.
    public mutating func setVarlinkMember(_ name: String, _ value: some VarlinkValue) {
        self[name] = value.varlinkValue
    }

    /// Sets the member `name` to `value`, leaving it out when it is `nil`. An `?object` that holds `null` (not
    /// `nil`) is sent as `null`.
    public mutating func setVarlinkMember<Wrapped: VarlinkValue>(_ name: String, _ value: Wrapped?) {
        guard let value else { return }
        self[name] = value.varlinkValue
    }
}

/// The errors of one interface, as the generator writes them: one case per `error` declaration.
public protocol VarlinkInterfaceError: Error, Sendable {
    /// The error for a varlink error reply, when the reply names one of the interface's errors.
    init?(_ error: VarlinkError)

    /// The varlink error reply for this error.
    var varlinkError: VarlinkError { get }
}
