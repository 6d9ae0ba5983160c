/// Runs the most frequent script command, `get`, without the argument parser.
///
/// The argument parser discovers a command's options by reflection, which costs several milliseconds of
/// runtime type lookups at every start; a shell loop calling `beaconctl get` pays it each time. The fast path
/// accepts only the plain form, `get [--address unix:PATH] [--json] [--raw|-r] [--timeout SECONDS] [--] KEY`
/// with each option at most once and valid values; anything else (help, a typo, a repeated option, a bad value)
/// returns `nil` and goes through the argument parser, which then reports it. Both paths run the same
/// ``GetCommand/execute(key:raw:settings:)``.
enum FastPath {
    /// The command for `arguments` (without the program name), or `nil` when the argument parser must handle them.
    static func command(for arguments: ArraySlice<String>) -> (() throws -> Void)? {
        guard arguments.first == "get" else { return nil }
        var settings = CommandSettings(address: nil, json: false, timeout: nil)
        var raw = false
        var key: String?
        // Which of --, --json, --raw, --address, --timeout were given (a repeated one goes to the parser).
        var seen = (dashes: false, json: false, raw: false, address: false, timeout: false)
        var index = arguments.startIndex + 1
        var operandsOnly = false
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if operandsOnly || !argument.hasPrefix("-") {
                guard key == nil else { return nil }
                key = argument
                continue
            }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            let canonical = name == "-r" ? "--raw" : name
            switch canonical {
            case "--":
                guard value == nil, !seen.dashes else { return nil }
                seen.dashes = true
                operandsOnly = true
            case "--json":
                guard value == nil, !seen.json else { return nil }
                seen.json = true
                settings.json = true
            case "--raw":
                guard value == nil, !seen.raw else { return nil }
                seen.raw = true
                raw = true
            case "--address", "--timeout":
                let repeated = canonical == "--address" ? seen.address : seen.timeout
                guard !repeated else { return nil }
                if canonical == "--address" { seen.address = true } else { seen.timeout = true }
                if value == nil {
                    guard index < arguments.endIndex, !arguments[index].hasPrefix("-") else { return nil }
                    value = arguments[index]
                    index += 1
                }
                guard let value else { return nil }
                if canonical == "--address" {
                    settings.address = value
                } else {
                    guard let seconds = Double(value) else { return nil }
                    settings.timeout = seconds
                }
            default:
                return nil
            }
        }
        guard let key, settings.problem == nil else { return nil }
        return { try GetCommand.execute(key: key, raw: raw, settings: settings) }
    }
}
