import ArgumentParser
import BeaconProtocol

/// `beaconctl list [PREFIX]`: the stored properties as a table.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List properties, sorted by key.",
        discussion: """
            Lists the properties whose key is PREFIX or lies below it (every property without PREFIX) as a \
            table: KEY, VALUE, VERSION, LIFETIME (persistent or ephemeral), MODIFIED (local time), ORIGIN. \
            With --json prints {"properties":[Property...],"version":N}.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only keys equal to or below this key, e.g. power.")
    var prefix: String?

    func run() throws {
        var parameters: [String: JSONValue] = [:]
        if let prefix { parameters["prefix"] = .string(prefix) }
        let reply = try options.daemon().call("io.beacon.Properties.List", parameters)
        var output = OutputBuffer.standardOutput()
        if options.json {
            output.line(JSONText.compact(reply))
        } else {
            let terminal = Terminal.standardOutput()
            var table = Table(
                headers: ["KEY", "VALUE", "VERSION", "LIFETIME", "MODIFIED", "ORIGIN"], flexibleColumn: 1)
            for property in reply["properties"]?.arrayValue ?? [] {
                table.append([
                    Table.Cell(property["key"]?.stringValue ?? "?", .cyan),
                    Table.Cell(property["value"].map { JSONText.compact($0) } ?? ""),
                    Table.Cell(property["version"].map { JSONText.compact($0) } ?? ""),
                    Table.Cell(property["ephemeral"]?.boolValue == true ? "ephemeral" : "persistent"),
                    Table.Cell(property["modifiedUsec"]?.intValue.map { TimeText.localTime(microseconds: $0) } ?? ""),
                    Table.Cell(property["origin"].map { EventFormatter.originText($0) } ?? ""),
                ])
            }
            for line in table.render(on: terminal) { output.line(line) }
        }
        output.flush()
    }
}
