import ArgumentParser
import BeaconProtocol

/// `beaconctl get KEY`: the value of one property.
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the value of a property.",
        discussion: """
            Prints the value as JSON ("Ada", 42, {"a":1}); --raw prints a string value without quotes. With \
            --json prints the whole property: {"property":{"key","value","version","modifiedUsec","ephemeral",\
            "origin"}}. A key that holds no value exits with status 1 (io.beacon.Properties.KeyNotFound).
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
        let reply = try settings.daemon().call("io.beacon.Properties.Get", ["key": .string(key)])
        var output = OutputBuffer.standardOutput()
        if settings.json {
            output.line(JSONText.compact(reply))
        } else {
            let value = reply["property"]?["value"] ?? .null
            if raw, let string = value.stringValue {
                output.line(string)
            } else {
                output.line(JSONText.compact(value))
            }
        }
        output.flush()
    }
}
