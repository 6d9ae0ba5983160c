import ArgumentParser

/// The option every streaming command takes.
struct StreamOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Exit (with status 0) after printing this many events.", valueName: "N"))
    var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1, not \(limit)") }
    }
}

extension EventStreams {
    /// Prints `initial` and then every event of every stream, one line each, flushed line by line, until
    /// `limit` events were printed. Never returns without a limit.
    func print(initial: [BusEvent], formatter: EventFormatter, limit: Int?) throws {
        var output = OutputBuffer.standardOutput()
        var printed = 0
        var batch = initial
        while true {
            for event in batch {
                output.line(formatter.line(for: event))
                printed += 1
                if let limit, printed >= limit {
                    output.flush()
                    return
                }
            }
            output.flush()
            batch = try next(deadline: .never) ?? []
        }
    }
}
