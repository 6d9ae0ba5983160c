import BeaconProtocol

extension GlobalOptions {
    /// Prints a method's reply: one line of JSON with --json, else the lines `human` makes of it for the terminal.
    func printReply(
        _ reply: [String: JSONValue], human: (_ reply: [String: JSONValue], _ terminal: Terminal) -> [String]
    ) {
        var output = OutputBuffer.standardOutput()
        if json {
            output.line(JSONText.compact(reply))
        } else {
            for line in human(reply, Terminal.standardOutput()) { output.line(line) }
        }
        output.flush()
    }

    /// Prints the reply of a call that prints nothing of its own: one line of JSON with --json. Then names on
    /// standard error the keys the reply lists as `locked`, which the call left alone (`what` says how: "not reset").
    func finishSettingsCall(_ reply: [String: JSONValue], lockedKeys what: String) {
        if json {
            var output = OutputBuffer.standardOutput()
            output.line(JSONText.compact(reply))
            output.flush()
        }
        let locked = (reply["locked"]?.arrayValue ?? []).compactMap(\.stringValue)
        if !locked.isEmpty {
            OutputBuffer.standardError("beaconctl: locked, \(what): " + locked.joined(separator: " "))
        }
    }
}
