import ArgumentParser
import BeaconProtocol

/// `beaconctl clients`: the connected clients.
struct ClientsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clients",
        abstract: "List the clients connected to the daemon.",
        discussion: """
            A table of ID, UID, PID, COMMAND, CONNECTED (local time), STREAM (Watch or Observe), PATTERNS, \
            QUEUED (bytes waiting to be read by the client), EPHEMERAL (properties it owns) and DELIVERY: the \
            stream's policy while suspended (drop, coalesce, hold or deliverImmediately; "+session" when the \
            session's activity suspends it too, "object=O" for an Observe of one object), and when suspended \
            "suspended", the pending Suspend calls, the events held and those dropped. This command's own \
            connection is listed too. With --json prints {"clients":[Client...]}.
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let reply = try options.daemon().call(IOBeaconDaemon.Clients.method)
        var output = OutputBuffer.standardOutput()
        if options.json {
            output.line(JSONText.compact(reply))
            output.flush()
            return
        }
        func text(_ value: JSONValue?) -> String {
            guard let value, !value.isNull else { return "-" }
            return value.stringValue ?? JSONText.compact(value)
        }
        var table = Table(
            headers: [
                "ID", "UID", "PID", "COMMAND", "CONNECTED", "STREAM", "PATTERNS", "QUEUED", "EPHEMERAL", "DELIVERY",
            ],
            flexibleColumn: 6)
        for client in reply["clients"]?.arrayValue ?? [] {
            let stream = client["stream"]?.stringValue.map { String($0.split(separator: ".").last ?? "") }
            let patterns = (client["patterns"]?.arrayValue ?? []).compactMap(\.stringValue)
            table.append([
                Table.Cell(text(client["id"])),
                Table.Cell(text(client["uid"])),
                Table.Cell(text(client["pid"])),
                Table.Cell(text(client["command"]), .cyan),
                Table.Cell(client["connectedUsec"]?.intValue.map { TimeText.localTime(microseconds: $0) } ?? "-"),
                Table.Cell(stream ?? "-"),
                Table.Cell(patterns.isEmpty ? "-" : patterns.joined(separator: " ")),
                Table.Cell(text(client["queuedBytes"])),
                Table.Cell(text(client["ephemeral"])),
                Table.Cell(Self.delivery(client)),
            ])
        }
        for line in table.render(on: Terminal.standardOutput()) { output.line(line) }
        output.flush()
    }

    /// `hold+session object=door suspended(1) held 12 dropped 3`, or `-` for a connection without a stream.
    static func delivery(_ client: JSONValue) -> String {
        guard let policy = client["policy"]?.stringValue else { return "-" }
        var text = policy
        if client["followsSession"]?.boolValue == true { text += "+session" }
        if let object = client["object"]?.stringValue { text += " object=" + object }
        if client["suspended"]?.boolValue == true {
            text += " suspended(\(client["suspensions"]?.intValue ?? 0))"
        }
        if let held = client["held"]?.intValue, held > 0 { text += " held \(held)" }
        if let dropped = client["dropped"]?.intValue, dropped > 0 { text += " dropped \(dropped)" }
        return text
    }
}
