import ArgumentParser
import BeaconProtocol

/// `beaconctl schemas`: the schemas and lockdown rules in force, and the problems of their files.
struct SchemasCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schemas",
        abstract: "Show the schemas and lockdown rules in force, where each came from, and the problems found.",
        discussion: """
            Three parts. Schemas: every schema file, in the order the daemon ranks them, then every \
            registration (by the client that made it), each with a table of KEY (a key or pattern), TYPE, \
            DEFAULT, SUMMARY and LINE. Lockdown: every lockdown file with a table of KEY, VALUE (the value \
            the rule forces; - for a rule that locks keys at their default) and LINE. Problems: the parts of \
            schema and lockdown files the daemon skipped, as FILE:LINE: PROBLEM (FILE: PROBLEM when it \
            concerns the whole file). With --json prints the reply of io.beacon.Settings.Schemas: \
            {"schemas":[{"source","registered","keys":[{"key","type","default","summary","line"}]}],\
            "lockdown":[{"file","rules":[{"key","line","value"}]}],"problems":[{"file","line","problem"}]}.
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let reply = try options.daemon().call(IOBeaconSettings.Schemas.method)
        options.printReply(reply, human: SchemasCommand.lines)
    }

    /// The reply as text: a heading per part, a line per source and an indented table of its entries.
    static func lines(_ reply: [String: JSONValue], on terminal: Terminal) -> [String] {
        func text(_ value: JSONValue?) -> String {
            guard let value else { return "-" }
            return JSONText.compact(value)
        }
        func lineText(_ value: JSONValue?) -> String {
            guard let line = value?.intValue, line > 0 else { return "-" }
            return String(line)
        }
        var lines: [String] = []
        func section(_ title: String, _ count: Int) {
            if !lines.isEmpty { lines.append("") }
            lines.append(terminal.paint(title + ":", .bold) + (count == 0 ? " none" : ""))
        }
        func indented(_ table: Table) {
            // The terminal's width less the indentation.
            var narrower = terminal
            narrower.width = terminal.width.map { max($0 - 2, 1) }
            for line in table.render(on: narrower) { lines.append("  " + line) }
        }

        let schemas = reply["schemas"]?.arrayValue ?? []
        section("Schemas", schemas.count)
        for source in schemas {
            let name = source["source"]?.stringValue ?? "?"
            let registered = source["registered"]?.boolValue == true
            lines.append(terminal.paint(registered ? "registered by " + name : name, .cyan))
            let keys = source["keys"]?.arrayValue ?? []
            guard !keys.isEmpty else {
                lines.append("  no keys")
                continue
            }
            var table = Table(headers: ["KEY", "TYPE", "DEFAULT", "SUMMARY", "LINE"], flexibleColumn: 3)
            for key in keys {
                table.append([
                    Table.Cell(key["key"]?.stringValue ?? "?", .cyan),
                    Table.Cell(key["type"]?.stringValue ?? "?"),
                    Table.Cell(text(key["default"])),
                    Table.Cell(key["summary"]?.stringValue ?? "-"),
                    Table.Cell(lineText(key["line"])),
                ])
            }
            indented(table)
        }

        let lockdown = reply["lockdown"]?.arrayValue ?? []
        section("Lockdown", lockdown.count)
        for source in lockdown {
            lines.append(terminal.paint(source["file"]?.stringValue ?? "?", .cyan))
            let rules = source["rules"]?.arrayValue ?? []
            guard !rules.isEmpty else {
                lines.append("  no rules")
                continue
            }
            var table = Table(headers: ["KEY", "VALUE", "LINE"], flexibleColumn: 1)
            for rule in rules {
                table.append([
                    Table.Cell(rule["key"]?.stringValue ?? "?", .cyan),
                    Table.Cell(text(rule["value"])),
                    Table.Cell(lineText(rule["line"])),
                ])
            }
            indented(table)
        }

        let problems = reply["problems"]?.arrayValue ?? []
        section("Problems", problems.count)
        for problem in problems {
            lines.append("  " + SchemasCommand.problemText(problem, on: terminal))
        }
        return lines
    }

    /// `FILE:LINE: PROBLEM`, or `FILE: PROBLEM` for a problem of the whole file (line 0).
    static func problemText(_ problem: JSONValue, on terminal: Terminal) -> String {
        var place = problem["file"]?.stringValue ?? "?"
        if let line = problem["line"]?.intValue, line > 0 { place += ":\(line)" }
        return terminal.paint(place + ":", .bold) + " " + (problem["problem"]?.stringValue ?? "?")
    }
}
