import ArgumentParser
import BeaconProtocol

/// `beaconctl describe KEY`: everything the daemon knows of one key.
struct DescribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Show a key's value, schema, default and lock.",
        discussion: """
            Prints the value the key shows (marked "(default)" when it is the schema's default, "(forced)" \
            when a lockdown rule forces it), whether a \
            value is stored (its version, and whether it is ephemeral), the type, default, summary and \
            description its schema gives and the schema file (or registering client) and line that declares \
            it, and the lockdown file and line of the rule that locks it. A key without any of these is \
            described too: it has no value, no schema and no lock. With --json prints the reply of \
            io.beacon.Settings.Describe: {"key","value","default","set","version","ephemeral","type","schema",\
            "pattern","defaultValue","summary","description","source","line","locked"}.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The property's key, e.g. app.editor.font-size.")
    var key: String

    func run() throws {
        let reply = try options.daemon().call(IOBeaconSettings.Describe.method, ["key": .string(key)])
        options.printReply(reply, human: DescribeCommand.lines)
    }

    /// The reply as labelled lines, labels aligned on their colon as in `status`.
    static func lines(_ reply: [String: JSONValue], on terminal: Terminal) -> [String] {
        let isDefault = reply["default"]?.boolValue == true
        let lock = reply["locked"]?.objectValue
        var rows: [(String, String)] = []
        rows.append(("Key", reply["key"]?.stringValue ?? "?"))
        if let value = reply["value"] {
            var mark = isDefault ? "(default)" : ""
            if lock?["forced"]?.boolValue == true { mark = "(forced)" }
            rows.append(("Value", JSONText.compact(value) + (mark.isEmpty ? "" : " " + terminal.paint(mark, .dim))))
        } else {
            rows.append(("Value", "none"))
        }
        if reply["set"]?.boolValue == true {
            var stored = "yes, version " + (reply["version"].map { JSONText.compact($0) } ?? "?")
            if reply["ephemeral"]?.boolValue == true { stored += ", ephemeral" }
            // A lock shows its forced value, or the default it holds the key at, instead of the stored one.
            if lock != nil && (lock?["forced"]?.boolValue == true || isDefault) { stored += " (hidden by the lock)" }
            rows.append(("Stored", stored))
        } else {
            rows.append(("Stored", "no"))
        }
        if let source = reply["source"]?.stringValue {
            rows.append(("Type", reply["type"]?.stringValue ?? "?"))
            rows.append(("Default", reply["defaultValue"].map { JSONText.compact($0) } ?? "none"))
            if let summary = reply["summary"]?.stringValue { rows.append(("Summary", summary)) }
            if let description = reply["description"]?.stringValue { rows.append(("Description", description)) }
            var declared = source + (reply["line"]?.intValue.map { ":\($0)" } ?? "")
            if let pattern = reply["pattern"]?.stringValue, pattern != reply["key"]?.stringValue {
                declared += " (pattern \(pattern))"
            }
            rows.append(("Schema", declared))
        } else {
            rows.append(("Schema", "none (any JSON value)"))
        }
        if let lock {
            let place = (lock["file"]?.stringValue ?? "?") + ":" + (lock["line"].map { JSONText.compact($0) } ?? "?")
            let how: String
            if lock["forced"]?.boolValue == true {
                how = "forces its value"
            } else if reply["defaultValue"] != nil {
                how = "holds it at its default"
            } else if reply["set"]?.boolValue == true {
                how = "holds it at its stored value"
            } else {
                how = "keeps it without a value"
            }
            rows.append(("Locked", "by \(place) (\(how))"))
        } else {
            rows.append(("Locked", "no"))
        }
        // A value of several lines (a description) continues under the first one.
        return LabelledLines.render(rows, on: terminal, indentingContinuations: true)
    }
}
