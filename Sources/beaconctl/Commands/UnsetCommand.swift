import ArgumentParser
import BeaconProtocol

/// `beaconctl unset KEY`: deletes a property.
struct UnsetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unset",
        abstract: "Delete a property.",
        discussion: """
            Prints nothing; with --json prints {"version":N}, the version of the deletion. A key that holds no \
            value exits with status 1 (io.beacon.Properties.KeyNotFound).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(
        name: .customLong("if-version"),
        help: ArgumentHelp("Delete only when the key's current version is N.", valueName: "N"))
    var ifVersion: Int64?

    @Argument(help: "The property's key.")
    var key: String

    func run() throws {
        var parameters: [String: JSONValue] = ["key": .string(key)]
        if let ifVersion { parameters["ifVersion"] = .int(ifVersion) }
        let reply = try options.daemon().call(IOBeaconProperties.Unset.method, parameters)
        if options.json {
            var output = OutputBuffer.standardOutput()
            output.line(JSONText.compact(reply))
            output.flush()
        }
    }
}
