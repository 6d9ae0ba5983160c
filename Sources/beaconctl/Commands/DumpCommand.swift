import ArgumentParser
import BeaconProtocol

/// `beaconctl dump [PREFIX]`: the stored values of a subtree, as `load` reads them.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print the stored values below a prefix as one JSON object, the input of load.",
        discussion: """
            Prints the persistent values stored at or below PREFIX (every key without PREFIX) as an indented \
            JSON object, members sorted, by key relative to PREFIX ("" for PREFIX itself): \
            beaconctl dump app.editor prints {"font-size": 14, "recent.a": "notes.txt"}. Defaults, forced \
            values and ephemeral values are left out. `beaconctl load PREFIX FILE` stores such an object \
            again, under the same or another prefix. With --json prints the reply of io.beacon.Settings.Dump \
            on one line: {"values":{...},"version":N}.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only keys equal to or below this key, e.g. app.editor.")
    var prefix: String?

    func run() throws {
        var parameters: [String: JSONValue] = [:]
        if let prefix { parameters["prefix"] = .string(prefix) }
        let reply = try options.daemon().call(IOBeaconSettings.Dump.method, parameters)
        options.printReply(reply) { reply, _ in [JSONText.pretty(reply["values"] ?? [:])] }
    }
}
