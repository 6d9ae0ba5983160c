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
        let (flagName, variable) = Self.names(of: key)
        if let values = flags[flagName] {
            return flag(values)
        }
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

    /// The flag and the environment variable of `key`: `--limits-max-value-size` and `BEACON_LIMITS_MAX_VALUE_SIZE`
    /// for `limits.maxValueSize`, words of a camel-case component separated. One pass over the bytes: keys are
    /// ASCII, so are the checks (which keeps Unicode's property tables out of start-up), and every configuration
    /// key is looked up at each start.
    static func names(of key: String) -> (flag: String, variable: String) {
        let (lower, upper, digits) = (
            UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9")
        )
        var flag = Array("--".utf8)
        var variable = Array("BEACON_".utf8)
        flag.reserveCapacity(2 * key.utf8.count + 2)
        variable.reserveCapacity(2 * key.utf8.count + 7)
        var previous: UInt8 = 0
        for byte in key.utf8 {
            if byte == UInt8(ascii: ".") || (lower.contains(previous) && upper.contains(byte)) {
                flag.append(UInt8(ascii: "-"))
                variable.append(UInt8(ascii: "_"))
            }
            previous = byte
            if byte == UInt8(ascii: ".") { continue }
            flag.append(upper.contains(byte) ? byte + 32 : byte)
            variable.append(
                lower.contains(byte)
                    ? byte - 32 : upper.contains(byte) || digits.contains(byte) ? byte : UInt8(ascii: "_"))
        }
        return (String(decoding: flag, as: UTF8.self), String(decoding: variable, as: UTF8.self))
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
