import ArgumentParser
import BeaconProtocol

/// `beaconctl watch PATTERN...`: streams property changes.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print changes of the properties matching the patterns as they happen.",
        discussion: """
            A pattern is a key whose segments may be * (one segment) or, last, ** (one or more segments): \
            power.**, app.*.state, ** (everything). One line per change: \
            "v42  power.level = 80  was 79  by beaconctl[1234] uid 1000", or "v43  power.level deleted". \
            With --json one Change object per line: {"key","value","old","version","deleted","origin"} \
            ("value" absent when deleted, "old" only with --old). Runs until interrupted or --limit.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var stream: StreamOptions

    @Flag(help: "First print the current value of every matching key.")
    var initial = false

    @Flag(help: "Also print the value each change replaced.")
    var old = false

    @Option(
        help: ArgumentHelp(
            "First replay every change after version N (deletions included), e.g. the last version a script saw.",
            valueName: "N"))
    var since: Int64?

    @Argument(help: "Key patterns.")
    var patterns: [String]

    func validate() throws {
        if patterns.isEmpty { throw ValidationError("give at least one pattern, e.g. '**' for every key") }
        if let since, since < 0 { throw ValidationError("--since must be 0 or more, not \(since)") }
    }

    func run() throws {
        var parameters: [String: JSONValue] = ["patterns": .array(patterns.map { .string($0) })]
        if initial { parameters["initial"] = true }
        if old { parameters["old"] = true }
        if let since { parameters["since"] = .int(since) }
        let streams = EventStreams(daemon: try options.daemon())
        let first = try streams.subscribe(.properties, parameters)
        let formatter = EventFormatter(terminal: Terminal.standardOutput(), json: options.json, tagged: false)
        try streams.print(initial: first, formatter: formatter, limit: stream.limit)
    }
}
