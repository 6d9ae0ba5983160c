import BeaconProtocol

/// Reads configuration keys (`limits.maxValueSize`) from the daemon's sources, strongest first: command-line flags
/// (`--limits-max-value-size 1024`), `BEACON_*` environment variables (`BEACON_LIMITS_MAX_VALUE_SIZE=1024`) and the
/// configuration file's values.
///
/// A key is looked up in each source in turn; the first source that has it decides. A value that does not convert
/// to the requested type counts as no value (the getter returns its default), without looking further.
public struct ConfigurationReader: Sendable {
    /// Flags with their values: `--key value`, `--key=value`, `--key v1 v2`; values split at commas. A flag without
    /// values is a true boolean.
    private var flags: [String: [String]]
    private var environment: [String: String]
    private var file: [String: ConfigurationFile.Value]

    public init(arguments: [String], environment: [String: String], file: ConfigurationFile? = nil) {
        flags = Self.parseFlags(arguments)
        self.environment = environment
        self.file = file?.values ?? [:]
    }

    /// A reader of every source: flags, environment, and the file that `config` names (which must exist), else the
    /// default file (`DefaultPaths.configFile`) when it exists; also returns the file that was read.
    public static func load(
        arguments: [String], environment: [String: String]
    ) throws -> (reader: ConfigurationReader, file: ConfigurationFile?) {
        let early = ConfigurationReader(arguments: arguments, environment: environment)
        let file: ConfigurationFile?
        if let explicit = early.string(forKey: "config") {
            file = try ConfigurationFile.load(explicit, allowMissing: false)
        } else {
            file = try ConfigurationFile.load(DefaultPaths.configFile(environment: environment), allowMissing: true)
        }
        return (file.map { early.adding($0) } ?? early, file)
    }

    /// The reader with `file` as its weakest source.
    public func adding(_ file: ConfigurationFile) -> ConfigurationReader {
        var reader = self
        reader.file = file.values
        return reader
    }

    public func string(forKey key: String) -> String? {
        lookup(key) { flag in
            flag.count == 1 ? flag[0] : nil
        } environment: { text in
            text
        } file: { value in
            if case .string(let string) = value { string } else { nil }
        }
    }

    public func string(forKey key: String, default fallback: String) -> String {
        string(forKey: key) ?? fallback
    }

    public func int(forKey key: String, default fallback: Int) -> Int {
        lookup(key) { flag in
            flag.count == 1 ? Int(flag[0]) : nil
        } environment: { text in
            Int(text)
        } file: { value in
            value.int
        } ?? fallback
    }

    public func bool(forKey key: String, default fallback: Bool) -> Bool {
        lookup(key) { flag in
            switch flag.count {
            case 0: true
            case 1: Bool(flag[0])
            default: nil
            }
        } environment: { text in
            switch text.lowercased() {
            case "yes", "1": true
            case "no", "0": false
            case let other: Bool(other)
            }
        } file: { value in
            value.bool
        } ?? fallback
    }

    /// A positive integer; a value that is not an integer or not positive is an error naming `key`.
    public func positiveInt(forKey key: String, default fallback: Int) throws -> Int {
        if let text = string(forKey: key), Int(text) == nil {
            throw ConfigurationError(key: key, reason: "\"\(text)\" is not an integer")
        }
        let value = int(forKey: key, default: fallback)
        guard value > 0 else { throw ConfigurationError(key: key, reason: "must be positive, got \(value)") }
        return value
    }

    public func intArray(forKey key: String, default fallback: [Int]) -> [Int] {
        lookup(key) { flag in
            Self.all(flag.map { Int($0) })
        } environment: { text in
            Self.all(text.split(separator: ",", omittingEmptySubsequences: false).map { Int(Self.trimmed($0)) })
        } file: { value in
            switch value {
            case .array(let elements): Self.all(elements.map(\.int))
            default: nil
            }
        } ?? fallback
    }

    /// An array of strings: repeated flags, a `:`-separated environment variable (like `PATH`), or a file array.
    public func stringArray(forKey key: String) -> [String]? {
        lookup(key) { flag in
            flag
        } environment: { text in
            text.split(separator: ":").map(String.init)
        } file: { value in
            switch value {
            case .array(let elements):
                Self.all(
                    elements.map {
                        if case .string(let string) = $0 { return string }
                        return nil
                    })
            case .string(let string): [string]
            default: nil
            }
        }
    }

    /// The value of the first source that has `key`, converted; `nil` if no source has it or it does not convert.
    private func lookup<T>(
        _ key: String,
        flag: ([String]) -> T?,
        environment: (String) -> T?,
        file: (ConfigurationFile.Value) -> T?
    ) -> T? {
        let components = key.split(separator: ".").map(String.init)
        let flagName = "--" + components.map(Self.flagName).joined(separator: "-")
        if let values = flags[flagName] {
            return flag(values)
        }
        let variable = (["BEACON"] + components.map { Self.variableName($0) }).joined(separator: "_")
        if let text = self.environment[variable] {
            return environment(text)
        }
        if let value = self.file[key] {
            return file(value)
        }
        return nil
    }

    private static func all<T>(_ values: [T?]) -> [T]? {
        var result: [T] = []
        for value in values {
            guard let value else { return nil }
            result.append(value)
        }
        return result
    }

    /// `camelCase` with `separator` between the words: `camel-Case`. Keys are ASCII, so are the checks (which
    /// keeps Unicode's property tables out of start-up).
    private static func words(_ component: String, separator: UInt8) -> [UInt8] {
        var result: [UInt8] = []
        var previous: UInt8 = 0
        for byte in component.utf8 {
            if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(previous),
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            {
                result.append(separator)
            }
            result.append(byte)
            previous = byte
        }
        return result
    }

    /// `max-value-size` for `maxValueSize`.
    private static func flagName(_ component: String) -> String {
        let bytes = words(component, separator: UInt8(ascii: "-")).map { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `MAX_VALUE_SIZE` for `maxValueSize`.
    private static func variableName(_ component: String) -> String {
        let bytes = words(component, separator: UInt8(ascii: "_")).map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - 32
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): byte
            default: UInt8(ascii: "_")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }

    private static func parseFlags(_ arguments: [String]) -> [String: [String]] {
        var result: [String: [String]] = [:]
        var current: String?
        func split(_ value: String) -> [String] {
            value.isEmpty ? [""] : value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        for argument in arguments.dropFirst() {
            if argument.hasPrefix("--") {
                if let equals = argument.firstIndex(of: "=") {
                    result[String(argument[..<equals]), default: []]
                        .append(contentsOf: split(String(argument[argument.index(after: equals)...])))
                    current = nil
                } else {
                    current = argument
                    if result[argument] == nil { result[argument] = [] }
                }
            } else if let current {
                result[current, default: []].append(contentsOf: split(argument))
            }
        }
        return result
    }
}
