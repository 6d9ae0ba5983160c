import ArgumentParser
import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `beaconctl get KEY`: the value of one property.
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the value of a property.",
        discussion: """
            Prints the value as JSON ("Ada", 42, {"a":1}); --raw prints a string value without quotes. With \
            --json prints the whole property: {"property":{"key","value","version","modifiedUsec","ephemeral",\
            "origin"}}, with "default":true when the value is the default of the key's schema and \
            "locked":{"file","line","forced"} when a lockdown file locks the key. On a terminal such a value \
            is followed by "(default)", "(locked by FILE:LINE)" or both, "(default, locked by FILE:LINE)"; in \
            a pipe or a file the value is printed alone. A key that holds no value exits with status 1 \
            (io.beacon.Properties.KeyNotFound). A provided key whose provider cannot reach where the values \
            live (beacon-fleet without an etcd quorum) prints its last known value, with a warning on \
            standard error.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(name: .shortAndLong, help: "Print a string value without quotes and escapes.")
    var raw = false

    @Argument(help: "The property's key, e.g. power.battery.level.")
    var key: String

    func run() throws {
        try GetCommand.execute(key: key, raw: raw, settings: options.settings)
    }

    /// Runs the command; also called by ``FastPath`` without the argument parser.
    static func execute(key: String, raw: Bool, settings: CommandSettings) throws {
        let reply = try settings.daemon().call(IOBeaconProperties.Get.method, ["key": .string(key)])
        var output = OutputBuffer.standardOutput()
        if settings.json {
            output.line(JSONText.compact(reply))
        } else {
            let property = reply["property"]
            let value = property?["value"] ?? .null
            var line = raw ? value.stringValue ?? JSONText.compact(value) : JSONText.compact(value)
            // Scripts read the value alone: the marks are for a person at a terminal.
            if let settings = property.flatMap(GetCommand.settingsText), isatty(1) == 1 {
                line += " " + Terminal.standardOutput().paint("(" + settings + ")", .dim)
            }
            output.line(line)
        }
        output.flush()
        if let unavailable = reply["unavailable"], !settings.json {
            let since = unavailable["sinceUsec"]?.intValue.map { " since " + TimeText.localTime(microseconds: $0) }
            OutputBuffer.standardError(
                "beaconctl: \(key) may be out of date: its provider is unavailable\(since ?? ""): "
                    + (unavailable["reason"]?.stringValue ?? "?"))
        }
    }

    /// "default", "locked by FILE:LINE" or both for a property that shows its default or is locked; `nil` for any
    /// other.
    static func settingsText(_ property: JSONValue) -> String? {
        var marks: [String] = []
        if property["default"]?.boolValue == true { marks.append("default") }
        if let lock = property["locked"] {
            let line = lock["line"].map { JSONText.compact($0) } ?? "?"
            marks.append("locked by \(lock["file"]?.stringValue ?? "?"):\(line)")
        }
        return marks.isEmpty ? nil : marks.joined(separator: ", ")
    }
}
