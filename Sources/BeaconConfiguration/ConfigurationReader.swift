import BeaconProtocol
import Synchronization

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
    /// Arguments before the first flag: no flag takes them.
    private var stray: [String]
    private var environment: [String: String]
    private var file: [String: ConfigurationFile.Value]
    /// Every key looked up so far, shared by the copies of this reader, for ``keysRead(notIn:)``.
    private let read = ReadKeys()

    public init(arguments: [String], environment: [String: String], file: ConfigurationFile? = nil) {
        (flags, stray) = Self.parseFlags(arguments)
        self.environment = environment
        self.file = file?.values ?? [:]
    }

    /// Fails on a flag that names none of `keys` (the program's keys; `config` is always known) and on an argument
    /// that is no flag's value: a misspelt flag (`--log-levle`) is an error with the nearest flag as a hint, rather
    /// than a setting silently left at its default. Called before the values are read, so that a misspelt flag is
    /// what is reported, not the missing value it was meant to give.
    public func checkFlags(knownKeys keys: [String]) throws {
        if let argument = stray.first {
            throw ConfigurationError(
                key: argument, reason: "not a flag (flags start with --, their values follow them); --help lists them")
        }
        let known = Set((keys + ["config"]).map { Self.names(of: $0).flag })
        for flag in flags.keys.sorted() where !known.contains(flag) {
            let nearest = known.map { (flag: $0, distance: Self.editDistance($0, flag)) }
                .min { ($0.distance, $0.flag) < ($1.distance, $1.flag) }
            let hint =
                nearest.map { $0.distance <= max(2, flag.utf8.count / 4) ? "did you mean \($0.flag)? " : "" } ?? ""
            throw ConfigurationError(key: flag, reason: "no such flag; \(hint)--help lists them")
        }
    }

    /// The keys this reader (or a copy) looked up that are not among `keys`: for a debug check that a program's list
    /// of its keys, which ``checkFlags(knownKeys:)`` takes, is complete.
    public func keysRead(notIn keys: [String]) -> [String] {
        let listed = Set(keys + ["config"])
        return read.keys.withLock { $0.subtracting(listed).sorted() }
    }

    /// The Levenshtein distance between two ASCII flags.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let (a, b) = (Array(a.utf8), Array(b.utf8))
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var diagonal = row[0]
            row[0] = i
            for j in 1...b.count {
                let above = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1))
                diagonal = above
            }
        }
        return row[b.count]
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
        read.keys.withLock { _ = $0.insert(key) }
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

    private static func parseFlags(_ arguments: [String]) -> (flags: [String: [String]], stray: [String]) {
        var result: [String: [String]] = [:]
        var stray: [String] = []
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
            } else {
                stray.append(argument)
            }
        }
        return (result, stray)
    }
}

/// The keys a reader and its copies have looked up.
private final class ReadKeys: Sendable {
    let keys = Mutex<Set<String>>([])
}
