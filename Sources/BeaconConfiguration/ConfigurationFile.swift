import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The JSON configuration file, parsed, and its values by key.
///
/// Nested objects become dotted keys (`{"limits": {"maxValueSize": 1}}` is `limits.maxValueSize`); values are
/// strings, numbers, booleans, and arrays of strings or of numbers and booleans; `null` is no value. The `bridge`
/// section is read on its own (``BridgeSettings``) and is not among the values.
public struct ConfigurationFile: Sendable {
    /// A value of the file: numbers and booleans convert into each other, as integers where exact.
    public enum Value: Sendable {
        case string(String)
        case number(JSONValue)
        case array([Value])

        /// An integer, or a boolean as 1 or 0.
        public var int: Int? {
            guard case .number(let number) = self else { return nil }
            return switch number {
            case .int(let int): Int(exactly: int)
            case .double(let double): Int(exactly: double)
            case .bool(let bool): bool ? 1 : 0
            default: nil
            }
        }

        /// A boolean, or a number as whether it is not zero.
        public var bool: Bool? {
            guard case .number(let number) = self else { return nil }
            return switch number {
            case .bool(let bool): bool
            case .int(let int): int != 0
            case .double(let double): double != 0
            default: nil
            }
        }
    }

    /// The file's path.
    public var path: String
    /// The whole document.
    public var document: JSONValue
    /// The document's values, keyed by their dotted paths.
    public var values: [String: Value]

    /// Reads and parses the file at `path`; `nil` if it does not exist and `allowMissing` is set.
    public static func load(_ path: String, allowMissing: Bool) throws -> ConfigurationFile? {
        var code: Int32 = 0
        guard let contents = POSIX.readFile(path, error: &code) else {
            if allowMissing && code == ENOENT { return nil }
            throw ConfigurationError(key: "config", reason: "cannot read \(path): \(String(cString: strerror(code)))")
        }
        return try parse(contents, path: path)
    }

    /// The configuration in `contents`, the text of the file at `path` (named in errors).
    public static func parse(_ contents: [UInt8], path: String) throws -> ConfigurationFile {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: contents)
        } catch {
            throw ConfigurationError(key: "config", reason: "\(path) does not parse: \(error)")
        }
        guard case .object(let root) = document else {
            throw ConfigurationError(key: "config", reason: "the top-level value of \(path) must be an object")
        }
        var values: [String: Value] = [:]
        for (name, value) in root where name != "bridge" {
            try flatten(value, at: [name], into: &values)
        }
        return ConfigurationFile(path: path, document: document, values: values)
    }

    private static func flatten(
        _ value: JSONValue,
        at components: [String],
        into values: inout [String: Value]
    ) throws {
        let key = components.joined(separator: ".")
        switch value {
        case .null:
            return
        case .object(let members):
            for (name, member) in members {
                try flatten(member, at: components + [name], into: &values)
            }
        case .string(let string):
            values[key] = .string(string)
        case .bool, .int, .double:
            values[key] = .number(value)
        case .array(let elements):
            values[key] = .array(try array(elements, key: key))
        }
    }

    /// An array of strings, or of numbers and booleans.
    private static func array(_ elements: [JSONValue], key: String) throws -> [Value] {
        var strings = false
        if case .string = elements.first { strings = true }
        return try elements.enumerated().map { index, element in
            switch (element, strings) {
            case (.string(let string), true):
                return .string(string)
            case (.bool, false), (.int, false), (.double, false):
                return .number(element)
            default:
                throw ConfigurationError(
                    key: "\(key).\(index)",
                    reason: "arrays hold only strings, or only numbers and booleans"
                )
            }
        }
    }
}

/// A configuration value that cannot be used.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var key: String
    public var reason: String
    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    public var description: String { "configuration \(key): \(reason)" }
}
