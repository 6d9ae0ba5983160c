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
            Keys with nothing stored but a default or a forced value are listed too, with version 0. When a \
            listed value is a schema's default or a key is locked, a last column SETTINGS says "default", \
            "locked by FILE:LINE" (the lockdown rule) or both, "default, locked by FILE:LINE". With --json \
            prints {"properties":[Property...],"version":N}.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only keys equal to or below this key, e.g. power.")
    var prefix: String?

    func run() throws {
        var parameters: [String: JSONValue] = [:]
        if let prefix { parameters["prefix"] = .string(prefix) }
        let reply = try options.daemon().call(IOBeaconProperties.List.method, parameters)
        var output = OutputBuffer.standardOutput()
        if options.json {
            output.line(JSONText.compact(reply))
        } else {
            let terminal = Terminal.standardOutput()
            let properties = reply["properties"]?.arrayValue ?? []
            // The settings column only when a default or a lock is listed: other lists look as they always did.
            let marks = properties.map(GetCommand.settingsText)
            let showMarks = marks.contains { $0 != nil }
            var table = Table(
                headers: ["KEY", "VALUE", "VERSION", "LIFETIME", "MODIFIED", "ORIGIN"]
                    + (showMarks ? ["SETTINGS"] : []),
                flexibleColumn: 1)
            for (property, mark) in zip(properties, marks) {
                // A key with only a default or a forced value was never modified.
                let modified = property["modifiedUsec"]?.intValue.map {
                    $0 == 0 ? "-" : TimeText.localTime(microseconds: $0)
                }
                var row = [
                    Table.Cell(property["key"]?.stringValue ?? "?", .cyan),
                    Table.Cell(property["value"].map { JSONText.compact($0) } ?? ""),
                    Table.Cell(property["version"].map { JSONText.compact($0) } ?? ""),
                    Table.Cell(property["ephemeral"]?.boolValue == true ? "ephemeral" : "persistent"),
                    Table.Cell(modified ?? ""),
                    Table.Cell(property["origin"].map { EventFormatter.originText($0) } ?? ""),
                ]
                if showMarks { row.append(Table.Cell(mark ?? "", .dim)) }
                table.append(row)
            }
            for line in table.render(on: terminal) { output.line(line) }
        }
        output.flush()
    }
}
