/// A JSON value as it travels on the wire.
///
/// Numbers written without a fraction or exponent that fit in `Int64` are ``int(_:)``; every other number is
/// ``double(_:)``. Objects do not keep member order.
///
/// Values produced by the parser are never nested deeper than ``JSONLimits/maxDepth``; ``encode(into:)``,
/// ``depth`` and equality walk a value one call level per nesting level.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, if this is an integer.
    public var intValue: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    /// The number as a `Double`, if this is an integer or a floating-point number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The Boolean, if this is a Boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member named `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The nesting depth: 0 for a scalar, 1 for a flat array or object, and one more for every level below.
    public var depth: Int {
        switch self {
        case .null, .bool, .int, .double, .string:
            return 0
        case .array(let elements):
            var deepest = 0
            for element in elements { deepest = Swift.max(deepest, element.depth) }
            return deepest + 1
        case .object(let members):
            var deepest = 0
            for member in members.values { deepest = Swift.max(deepest, member.depth) }
            return deepest + 1
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var members: [String: JSONValue] = [:]
        members.reserveCapacity(elements.count)
        for (key, value) in elements { members[key] = value }
        self = .object(members)
    }
}

extension JSONValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text.
    public var description: String { jsonString }
}
