import BeaconProtocol
import Configuration

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The JSON configuration file, parsed, and its values as a configuration provider.
///
/// Nested objects become dotted keys (`{"limits": {"maxValueSize": 1}}` is `limits.maxValueSize`); values are
/// strings, numbers, booleans, and arrays of strings or of numbers and booleans; `null` is no value. The `bridge`
/// section is read on its own (``BridgeSettings``) and is not part of the provider.
struct ConfigurationFile: Sendable {
    /// The file's path.
    var path: String
    /// The whole document.
    var document: JSONValue
    /// The document's values, keyed by their dotted paths.
    var provider: InMemoryProvider

    /// Reads and parses the file at `path`; `nil` if it does not exist and `allowMissing` is set.
    static func load(_ path: String, allowMissing: Bool) throws -> ConfigurationFile? {
        var code: Int32 = 0
        guard let contents = readFile(path, error: &code) else {
            if allowMissing && code == ENOENT { return nil }
            throw ConfigurationError(key: "config", reason: "cannot read \(path): \(String(cString: strerror(code)))")
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: contents)
        } catch {
            throw ConfigurationError(key: "config", reason: "\(path) does not parse: \(error)")
        }
        guard case .object(let root) = document else {
            throw ConfigurationError(key: "config", reason: "the top-level value of \(path) must be an object")
        }
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (name, value) in root where name != "bridge" {
            try flatten(value, at: [name], into: &values)
        }
        return ConfigurationFile(
            path: path,
            document: document,
            provider: InMemoryProvider(name: "file \(path)", values: values)
        )
    }

    private static func flatten(
        _ value: JSONValue,
        at components: [String],
        into values: inout [AbsoluteConfigKey: ConfigValue]
    ) throws {
        let content: ConfigContent
        switch value {
        case .null:
            return
        case .object(let members):
            for (name, member) in members {
                try flatten(member, at: components + [name], into: &values)
            }
            return
        case .string(let string):
            content = .string(string)
        case .bool(let bool):
            content = .bool(bool)
        case .int, .double:
            content = number(value).map { .int($0) } ?? .double(value.doubleValue ?? 0)
        case .array(let elements):
            content = try array(elements, at: components)
        }
        // Joined and split again like the keys looked up, so that `{"a.b": 1}` is `a.b` as well.
        let key = AbsoluteConfigKey(ConfigKey(components.joined(separator: ".")))
        values[key] = ConfigValue(content, isSecret: false)
    }

    /// An integral number as an `Int`; `nil` for other values.
    private static func number(_ value: JSONValue) -> Int? {
        switch value {
        case .int(let int): Int(exactly: int)
        case .double(let double): Int(exactly: double)
        default: nil
        }
    }

    /// An array of strings, or of numbers and booleans (booleans count as 1 and 0 among numbers).
    private static func array(_ elements: [JSONValue], at components: [String]) throws -> ConfigContent {
        func unexpected(_ index: Int) -> ConfigurationError {
            ConfigurationError(
                key: (components + ["\(index)"]).joined(separator: "."),
                reason: "arrays hold only strings, or only numbers and booleans"
            )
        }
        guard let first = elements.first else { return .intArray([]) }
        switch first {
        case .string:
            return .stringArray(
                try elements.enumerated().map { index, element in
                    guard case .string(let string) = element else { throw unexpected(index) }
                    return string
                }
            )
        case .bool where elements.allSatisfy({ if case .bool = $0 { true } else { false } }):
            return .boolArray(elements.map { $0.boolValue ?? false })
        case .int, .double, .bool:
            var integers: [Int]? = []
            var doubles: [Double] = []
            for (index, element) in elements.enumerated() {
                switch element {
                case .bool(let bool):
                    integers?.append(bool ? 1 : 0)
                    doubles.append(bool ? 1 : 0)
                case .int, .double:
                    if let integer = number(element) {
                        integers?.append(integer)
                    } else {
                        integers = nil
                    }
                    doubles.append(element.doubleValue ?? 0)
                default:
                    throw unexpected(index)
                }
            }
            return integers.map { .intArray($0) } ?? .doubleArray(doubles)
        default:
            throw unexpected(0)
        }
    }

    /// The contents of the file at `path`; `nil` with the `errno` in `error` when it cannot be read.
    private static func readFile(_ path: String, error: inout Int32) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            error = errno
            return nil
        }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                error = errno
                return nil
            }
            if count == 0 { return contents }
            contents.append(contentsOf: chunk[0..<count])
        }
    }
}
