import ArgumentParser
import BeaconProtocol

/// `beaconctl monitor [PATTERN...]`: every notification and property change.
struct MonitorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Print every notification and property change, with its sender.",
        discussion: """
            Watches properties and observes notifications matching the patterns (default **, everything) on \
            two connections. Text lines start with "change" or "notification"; with --json every line is the \
            Change or Notification object with "type":"change" or "type":"notification" added. Changes and \
            notifications are each in order; between the two kinds the order is the order of arrival. Runs \
            until interrupted or --limit.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var stream: StreamOptions

    @Argument(help: "Key and notification-name patterns (default: **).")
    var patterns: [String] = []

    func run() throws {
        let list: JSONValue = .array((patterns.isEmpty ? ["**"] : patterns).map { .string($0) })
        let streams = EventStreams(daemon: try options.daemon())
        var first = try streams.subscribe(.properties, ["patterns": list])
        first += try streams.subscribe(.notifications, ["patterns": list])
        let formatter = EventFormatter(terminal: Terminal.standardOutput(), json: options.json, tagged: true)
        try streams.print(initial: first, formatter: formatter, limit: stream.limit)
    }
}
