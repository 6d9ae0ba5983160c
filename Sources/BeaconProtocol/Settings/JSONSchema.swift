/// The part of JSON Schema that a settings key may declare.
///
/// Supported keywords: `type`, `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
/// `minLength`, `maxLength`, `items`, `minItems`, `maxItems`, `properties`, `required` and `additionalProperties`.
/// The annotations `title`, `description`, `default`, `$comment`, `$schema` and `examples` are accepted and ignored
/// (a settings key's own default and description are read by ``SchemaFile``, not here); any other keyword is
/// refused, so that a schema never silently means less than its author wrote.
///
/// As in JSON Schema, a keyword constrains only the values of its own type (`minimum` says nothing about a string)
/// unless `type` rules the other types out. `integer` accepts a floating-point number without a fraction, and `enum`
/// and `const` compare numbers by value, so `1` and `1.0` are the same.
///
/// The schema is parsed once into a tree of nodes; ``violation(of:)`` walks that tree alongside the value and
/// allocates nothing until it has something to report.
public struct JSONSchema: Sendable, Hashable {
    /// The schema as given (for describing it back to clients).
    public let json: JSONValue
    let root: SchemaNode

    /// Parses a schema object.
    ///
    /// - Throws: ``JSONSchemaError`` naming the path of the offending keyword inside the schema, e.g.
    ///   `properties.size.minimum: expected a number`.
    public init(_ value: JSONValue) throws(JSONSchemaError) {
        self.root = try SchemaNode.parse(value, path: "")
        self.json = value
    }

    /// `nil` when `value` conforms; otherwise why not, with the path inside the value of the part that does not,
    /// e.g. `at .size: 80 is above the maximum 72` or `at [2]: expected string, got null`.
    ///
    /// When several parts fail, the one reported is chosen deterministically (declared properties by name, then
    /// undeclared ones by name, elements by index).
    public func violation(of value: JSONValue) -> String? {
        guard let violation = root.check(value) else { return nil }
        return violation.text
    }

    /// A short summary of the values accepted, e.g. `integer 6...72`, `string`, `array of string`, `object`,
    /// `one of "a", "b"`, `integer or null` or `any`.
    public var typeSummary: String { root.summary }

    public static func == (lhs: JSONSchema, rhs: JSONSchema) -> Bool { lhs.json == rhs.json }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }
}

/// Why a schema was refused, and where in it.
public struct JSONSchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The dot-separated path of the offending part inside the schema, e.g. `properties.size.minimum`; empty for
    /// the schema itself.
    public var path: String
    /// What is wrong there.
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// `path: reason`, or the reason alone when the path is empty.
    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

// MARK: - Parsed form

/// The JSON types a schema can name.
enum SchemaType: UInt8, Sendable, CaseIterable {
    case null, boolean, integer, number, string, array, object

    var name: String {
        switch self {
        case .null: return "null"
        case .boolean: return "boolean"
        case .integer: return "integer"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    var bit: UInt8 { 1 << rawValue }

    init?(name: String) {
        guard let type = SchemaType.allCases.first(where: { $0.name == name }) else { return nil }
        self = type
    }
}

/// A number bound from a schema, kept as written so that integers compare exactly.
enum SchemaNumber: Sendable, Hashable {
    case int(Int64)
    case double(Double)

    init?(_ value: JSONValue) {
        switch value {
        case .int(let int): self = .int(int)
        case .double(let double): self = .double(double)
        default: return nil
        }
    }

    var text: String {
        switch self {
        case .int(let int): return String(int)
        case .double(let double): return JSONValue.double(double).jsonString
        }
    }

    /// -1, 0 or 1 as `self` is below, equal to or above `other`, exactly (no rounding of large integers).
    func compare(_ other: SchemaNumber) -> Int {
        switch (self, other) {
        case (.int(let a), .int(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.double(let a), .double(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.double(let a), .int(let b)): return Self.compare(a, b)
        case (.int(let a), .double(let b)): return -Self.compare(b, a)
        }
    }

    private static func compare(_ double: Double, _ int: Int64) -> Int {
        // Every Int64 lies in [-2^63, 2^63); outside it the double wins outright. Inside, the whole part converts
        // exactly and the fraction breaks a tie.
        if double < -9_223_372_036_854_775_808.0 { return -1 }
        if double >= 9_223_372_036_854_775_808.0 { return 1 }
        let whole = double.rounded(.down)
        let wholeInt = Int64(whole)
        if wholeInt != int { return wholeInt < int ? -1 : 1 }
        return double > whole ? 1 : 0
    }
}

/// One level of a parsed schema. Immutable, hence `Sendable`.
final class SchemaNode: Sendable {
    struct Property: Sendable {
        let name: String
        let node: SchemaNode
    }

    /// What `additionalProperties` allows.
    enum AdditionalProperties: Sendable {
        case allowed
        case forbidden
        case schema(SchemaNode)
    }

    /// The types allowed, as ``SchemaType/bit``s; 0 for any.
    let typeMask: UInt8
    /// The types in the order written, `null` last (for messages).
    let typeNames: [SchemaType]
    /// The `enum` values, or the `const` value alone.
    let allowedValues: [JSONValue]?
    let isConst: Bool
    let minimum: SchemaNumber?
    let maximum: SchemaNumber?
    let exclusiveMinimum: SchemaNumber?
    let exclusiveMaximum: SchemaNumber?
    let minLength: Int?
    let maxLength: Int?
    let items: SchemaNode?
    let minItems: Int?
    let maxItems: Int?
    /// Sorted by name, so that the first failing property is the same in every process.
    let properties: [Property]
    let propertyIndex: [String: SchemaNode]
    let required: [String]
    /// The names of ``properties`` and ``required`` as UTF-8, for the walk over JSON text
    /// (``JSONSchema/violation(ofValidJSON:)``).
    let propertyNamesUTF8: [[UInt8]]
    let requiredUTF8: [[UInt8]]
    /// For each of ``properties``, the bit of its name in ``required`` (0 when not required); whether some required
    /// name is not among ``properties``.
    let propertyRequiredBits: [UInt64]
    let requiresUndeclared: Bool
    let additionalProperties: AdditionalProperties

    private init(_ builder: Builder) {
        var mask: UInt8 = 0
        for type in builder.types { mask |= type.bit }
        typeMask = mask
        typeNames = builder.types.filter { $0 != .null } + builder.types.filter { $0 == .null }
        if let constValue = builder.constValue {
            allowedValues = [constValue]
            isConst = true
        } else {
            allowedValues = builder.enumValues
            isConst = false
        }
        minimum = builder.minimum
        maximum = builder.maximum
        exclusiveMinimum = builder.exclusiveMinimum
        exclusiveMaximum = builder.exclusiveMaximum
        minLength = builder.minLength
        maxLength = builder.maxLength
        items = builder.items
        minItems = builder.minItems
        maxItems = builder.maxItems
        properties = builder.properties
        var index: [String: SchemaNode] = [:]
        for property in builder.properties { index[property.name] = property.node }
        propertyIndex = index
        required = builder.required
        propertyNamesUTF8 = builder.properties.map { Array($0.name.utf8) }
        requiredUTF8 = builder.required.map { Array($0.utf8) }
        propertyRequiredBits = builder.properties.map { property in
            guard let index = builder.required.firstIndex(of: property.name), index < 64 else { return 0 }
            return 1 << UInt64(index)
        }
        requiresUndeclared = builder.required.contains { name in !builder.properties.contains { $0.name == name } }
        additionalProperties = builder.additionalProperties
    }

    private struct Builder {
        var types: [SchemaType] = []
        var enumValues: [JSONValue]?
        var constValue: JSONValue?
        var minimum: SchemaNumber?
        var maximum: SchemaNumber?
        var exclusiveMinimum: SchemaNumber?
        var exclusiveMaximum: SchemaNumber?
        var minLength: Int?
        var maxLength: Int?
        var items: SchemaNode?
        var minItems: Int?
        var maxItems: Int?
        var properties: [Property] = []
        var required: [String] = []
        var additionalProperties = AdditionalProperties.allowed
    }

    // MARK: Parsing

    private static let annotations: Set<String> = [
        "title", "description", "default", "$comment", "$schema", "examples",
    ]

    /// Parses the schema object `value` found at `path` (dot-separated, empty for the root).
    static func parse(_ value: JSONValue, path: String) throws(JSONSchemaError) -> SchemaNode {
        guard case .object(let members) = value else {
            throw JSONSchemaError(path: path, reason: "expected a schema object")
        }
        var builder = Builder()
        // By name, so that of several errors the same one is reported every time.
        for keyword in members.keys.sorted() {
            let member = members[keyword]!
            let memberPath = join(path, keyword)
            switch keyword {
            case "type":
                builder.types = try parseTypes(member, path: memberPath)
            case "enum":
                guard case .array(let values) = member, !values.isEmpty else {
                    throw JSONSchemaError(path: memberPath, reason: "expected a non-empty array of values")
                }
                builder.enumValues = values
            case "const":
                builder.constValue = member
            case "minimum":
                builder.minimum = try parseNumber(member, path: memberPath)
            case "maximum":
                builder.maximum = try parseNumber(member, path: memberPath)
            case "exclusiveMinimum":
                builder.exclusiveMinimum = try parseNumber(member, path: memberPath)
            case "exclusiveMaximum":
                builder.exclusiveMaximum = try parseNumber(member, path: memberPath)
            case "minLength":
                builder.minLength = try parseCount(member, path: memberPath)
            case "maxLength":
                builder.maxLength = try parseCount(member, path: memberPath)
            case "minItems":
                builder.minItems = try parseCount(member, path: memberPath)
            case "maxItems":
                builder.maxItems = try parseCount(member, path: memberPath)
            case "items":
                if case .array = member {
                    throw JSONSchemaError(
                        path: memberPath, reason: "expected a schema object (arrays of schemas are not supported)")
                }
                builder.items = try parse(member, path: memberPath)
            case "properties":
                guard case .object(let schemas) = member else {
                    throw JSONSchemaError(path: memberPath, reason: "expected an object of schemas")
                }
                var properties: [Property] = []
                properties.reserveCapacity(schemas.count)
                for name in schemas.keys.sorted() {
                    let node = try parse(schemas[name]!, path: join(memberPath, name))
                    properties.append(Property(name: name, node: node))
                }
                builder.properties = properties
            case "required":
                guard case .array(let names) = member else {
                    throw JSONSchemaError(path: memberPath, reason: "expected an array of strings")
                }
                var required: [String] = []
                for name in names {
                    guard case .string(let string) = name else {
                        throw JSONSchemaError(path: memberPath, reason: "expected an array of strings")
                    }
                    if !required.contains(string) { required.append(string) }
                }
                builder.required = required
            case "additionalProperties":
                switch member {
                case .bool(let allowed): builder.additionalProperties = allowed ? .allowed : .forbidden
                case .object: builder.additionalProperties = .schema(try parse(member, path: memberPath))
                default:
                    throw JSONSchemaError(path: memberPath, reason: "expected a boolean or a schema object")
                }
            default:
                guard annotations.contains(keyword) else {
                    throw JSONSchemaError(path: path, reason: "unsupported keyword \(JSONValue.string(keyword))")
                }
            }
        }
        // With both, `const` says it all, unless it is not among the `enum` values and nothing could conform.
        if let constValue = builder.constValue, let enumValues = builder.enumValues,
            !enumValues.contains(where: { jsonEqualNumerically($0, constValue) })
        {
            throw JSONSchemaError(path: join(path, "const"), reason: "the value is not among the enum values")
        }
        return SchemaNode(builder)
    }

    private static func join(_ path: String, _ component: String) -> String {
        path.isEmpty ? component : path + "." + component
    }

    private static func parseTypes(_ value: JSONValue, path: String) throws(JSONSchemaError) -> [SchemaType] {
        let names: [JSONValue]
        switch value {
        case .string: names = [value]
        case .array(let elements) where !elements.isEmpty: names = elements
        default: throw JSONSchemaError(path: path, reason: "expected a type name or a non-empty array of them")
        }
        var types: [SchemaType] = []
        for name in names {
            guard case .string(let string) = name else {
                throw JSONSchemaError(path: path, reason: "expected a type name or a non-empty array of them")
            }
            guard let type = SchemaType(name: string) else {
                throw JSONSchemaError(
                    path: path,
                    reason: "unknown type \(name); expected null, boolean, integer, number, string, array or object")
            }
            guard !types.contains(type) else {
                throw JSONSchemaError(path: path, reason: "type \(name) is listed twice")
            }
            types.append(type)
        }
        return types
    }

    private static func parseNumber(_ value: JSONValue, path: String) throws(JSONSchemaError) -> SchemaNumber {
        guard let number = SchemaNumber(value) else { throw JSONSchemaError(path: path, reason: "expected a number") }
        return number
    }

    private static func parseCount(_ value: JSONValue, path: String) throws(JSONSchemaError) -> Int {
        switch value {
        case .int(let int) where int >= 0:
            if let count = Int(exactly: int) { return count }
        case .double(let double) where double >= 0 && double.rounded(.towardZero) == double:
            // Counts beyond what any value can reach act as no bound at all, so saturate rather than refuse.
            return double < 9_223_372_036_854_775_808.0 ? Int(double) : Int.max
        default:
            break
        }
        throw JSONSchemaError(path: path, reason: "expected a non-negative integer")
    }

    // MARK: Validation

    /// The first way `value` fails this schema, or `nil`.
    func check(_ value: JSONValue) -> SchemaViolation? {
        if typeMask != 0 && typeMask & Self.typeBits(of: value) == 0 {
            return SchemaViolation("expected \(typeList), got \(Self.typeName(of: value))")
        }
        if let allowed = allowedValues, !allowed.contains(where: { jsonEqualNumerically($0, value) }) {
            return SchemaViolation(allowedValuesMessage(allowed))
        }
        switch value {
        case .null, .bool:
            return nil
        case .int, .double:
            return checkNumber(value)
        case .string(let string):
            return checkString(string)
        case .array(let elements):
            return checkArray(elements)
        case .object(let members):
            return checkObject(members)
        }
    }

    private func checkNumber(_ value: JSONValue) -> SchemaViolation? {
        guard minimum != nil || maximum != nil || exclusiveMinimum != nil || exclusiveMaximum != nil,
            let number = SchemaNumber(value)
        else { return nil }
        if let minimum, number.compare(minimum) < 0 {
            return SchemaViolation("\(number.text) is below the minimum \(minimum.text)")
        }
        if let maximum, number.compare(maximum) > 0 {
            return SchemaViolation("\(number.text) is above the maximum \(maximum.text)")
        }
        if let exclusiveMinimum, number.compare(exclusiveMinimum) <= 0 {
            return SchemaViolation("\(number.text) is not above the exclusive minimum \(exclusiveMinimum.text)")
        }
        if let exclusiveMaximum, number.compare(exclusiveMaximum) >= 0 {
            return SchemaViolation("\(number.text) is not below the exclusive maximum \(exclusiveMaximum.text)")
        }
        return nil
    }

    private func checkString(_ string: String) -> SchemaViolation? {
        guard minLength != nil || maxLength != nil else { return nil }
        let length = string.unicodeScalars.count
        if let minLength, length < minLength {
            return SchemaViolation("expected at least \(Self.count(minLength, "character")), got \(length)")
        }
        if let maxLength, length > maxLength {
            return SchemaViolation("expected at most \(Self.count(maxLength, "character")), got \(length)")
        }
        return nil
    }

    private func checkArray(_ elements: [JSONValue]) -> SchemaViolation? {
        if let minItems, elements.count < minItems {
            return SchemaViolation("expected at least \(Self.count(minItems, "item")), got \(elements.count)")
        }
        if let maxItems, elements.count > maxItems {
            return SchemaViolation("expected at most \(Self.count(maxItems, "item")), got \(elements.count)")
        }
        guard let items else { return nil }
        for (index, element) in elements.enumerated() {
            if var violation = items.check(element) {
                violation.reversedPath.append(.index(index))
                return violation
            }
        }
        return nil
    }

    private func checkObject(_ members: [String: JSONValue]) -> SchemaViolation? {
        for name in required where members[name] == nil {
            return SchemaViolation("missing required property \(JSONValue.string(name))")
        }
        for property in properties {
            guard let member = members[property.name] else { continue }
            if var violation = property.node.check(member) {
                violation.reversedPath.append(.member(property.name))
                return violation
            }
        }
        if case .allowed = additionalProperties { return nil }
        // Dictionary order differs between processes: report the undeclared member that fails with the least name.
        var first: (name: String, violation: SchemaViolation)?
        for (name, member) in members where propertyIndex[name] == nil {
            if let first, first.name < name { continue }
            switch additionalProperties {
            case .allowed:
                return nil
            case .forbidden:
                first = (name, SchemaViolation("property not allowed"))
            case .schema(let node):
                if let violation = node.check(member) { first = (name, violation) }
            }
        }
        guard var found = first else { return nil }
        found.violation.reversedPath.append(.member(found.name))
        return found.violation
    }

    private var typeList: String { typeNames.map(\.name).joined(separator: " or ") }

    private func allowedValuesMessage(_ allowed: [JSONValue]) -> String {
        if isConst { return "expected \(allowed[0])" }
        return "expected one of \(Self.list(allowed))"
    }

    private static func typeBits(of value: JSONValue) -> UInt8 {
        switch value {
        case .null: return SchemaType.null.bit
        case .bool: return SchemaType.boolean.bit
        case .int: return SchemaType.integer.bit | SchemaType.number.bit
        case .double(let double):
            let isIntegral = double.isFinite && double.rounded(.towardZero) == double
            return isIntegral ? SchemaType.integer.bit | SchemaType.number.bit : SchemaType.number.bit
        case .string: return SchemaType.string.bit
        case .array: return SchemaType.array.bit
        case .object: return SchemaType.object.bit
        }
    }

    private static func typeName(of value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "boolean"
        case .int: return "integer"
        case .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    private static func count(_ count: Int, _ noun: String) -> String {
        count == 1 ? "1 \(noun)" : "\(count) \(noun)s"
    }

    /// `1, 2, "three"`, shortened after the first few values.
    private static func list(_ values: [JSONValue]) -> String {
        let shown = 8
        var text = values.prefix(shown).map(\.jsonString).joined(separator: ", ")
        if values.count > shown { text += ", … (\(values.count) values)" }
        return text
    }

    // MARK: Summary

    var summary: String {
        if let allowed = allowedValues {
            return isConst ? "exactly \(allowed[0])" : "one of \(Self.list(allowed))"
        }
        guard !typeNames.isEmpty else { return "any" }
        return typeNames.map(describe).joined(separator: " or ")
    }

    private func describe(_ type: SchemaType) -> String {
        switch type {
        case .integer, .number:
            guard let range = rangeSummary else { return type.name }
            return "\(type.name) \(range)"
        case .string:
            guard let lengths = lengthSummary else { return "string" }
            return "string of \(lengths)"
        case .array:
            guard let items else { return "array" }
            let element = items.summary
            return element.containsBytes(" or ") ? "array of (\(element))" : "array of \(element)"
        case .null, .boolean, .object:
            return type.name
        }
    }

    /// `6...72`, `0..<1`, `>= 6`, `> 0 and <= 1`, …, or `nil` when numbers are unbounded.
    private var rangeSummary: String? {
        // Of an inclusive and an exclusive bound on the same side, the stricter one shows.
        var lower: (number: SchemaNumber, inclusive: Bool)?
        if let minimum { lower = (minimum, true) }
        if let exclusiveMinimum, lower.map({ exclusiveMinimum.compare($0.number) >= 0 }) ?? true {
            lower = (exclusiveMinimum, false)
        }
        var upper: (number: SchemaNumber, inclusive: Bool)?
        if let maximum { upper = (maximum, true) }
        if let exclusiveMaximum, upper.map({ exclusiveMaximum.compare($0.number) <= 0 }) ?? true {
            upper = (exclusiveMaximum, false)
        }
        switch (lower, upper) {
        case (nil, nil):
            return nil
        case (let lower?, nil):
            return "\(lower.inclusive ? ">=" : ">") \(lower.number.text)"
        case (nil, let upper?):
            return "\(upper.inclusive ? "<=" : "<") \(upper.number.text)"
        case (let lower?, let upper?):
            if lower.inclusive { return "\(lower.number.text)\(upper.inclusive ? "..." : "..<")\(upper.number.text)" }
            return "> \(lower.number.text) and \(upper.inclusive ? "<=" : "<") \(upper.number.text)"
        }
    }

    /// `1...64 characters`, `at least 1 character`, `at most 64 characters`, or `nil` when unbounded.
    private var lengthSummary: String? {
        switch (minLength, maxLength) {
        case (nil, nil): return nil
        case (let low?, nil): return "at least \(Self.count(low, "character"))"
        case (nil, let high?): return "at most \(Self.count(high, "character"))"
        case (let low?, let high?): return "\(low)...\(high) characters"
        }
    }
}

/// Why a value fails a schema, with the path to the failing part built on the way back up.
struct SchemaViolation {
    enum Step {
        case member(String)
        case index(Int)
    }

    /// Innermost step first.
    var reversedPath: [Step] = []
    var message: String

    init(_ message: String) { self.message = message }

    /// `at .size[2]: message`, or the message alone for the value itself.
    var text: String {
        guard !reversedPath.isEmpty else { return message }
        var path = "at "
        for step in reversedPath.reversed() {
            switch step {
            case .index(let index):
                path += "[\(index)]"
            case .member(let name):
                if Self.isPlainName(name) {
                    path += "." + name
                } else {
                    path += "[\(JSONValue.string(name))]"
                }
            }
        }
        return path + ": " + message
    }

    private static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    return true
                default:
                    return false
                }
            }
    }
}

/// JSON equality that compares numbers by value, so that `1` equals `1.0`, at any depth.
func jsonEqualNumerically(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.int, .double), (.double, .int):
        guard let left = SchemaNumber(lhs), let right = SchemaNumber(rhs) else { return false }
        return left.compare(right) == 0
    case (.array(let left), .array(let right)):
        guard left.count == right.count else { return false }
        for index in left.indices where !jsonEqualNumerically(left[index], right[index]) { return false }
        return true
    case (.object(let left), .object(let right)):
        guard left.count == right.count else { return false }
        for (name, value) in left {
            guard let other = right[name], jsonEqualNumerically(value, other) else { return false }
        }
        return true
    default:
        return lhs == rhs
    }
}
