import ArgumentParser
import BeaconBlockingClient
import BeaconProtocol

/// `beaconctl wait NAME|KEY[=VALUE]`: blocks until a notification is posted or a property has a value.
struct WaitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a notification is posted or a property has a value.",
        discussion: """
            TARGET is a name or key, optionally with =VALUE (JSON, or a plain string). Notifications and \
            properties share one name syntax, so wait watches both at once: it is done when the property \
            TARGET exists (with VALUE: equals VALUE) -- also when it already does at start -- or when a \
            notification TARGET is posted (with VALUE: whose userInfo equals VALUE). Both subscriptions are in \
            place before the current value is checked, so nothing that happens after wait starts is missed.

            Prints the event that ended the wait, as monitor does, and exits 0; exits 4 when --timeout \
            seconds pass first (default: wait for ever). TARGET may also be a pattern (app.*.ready).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(
        help: ArgumentHelp("The notification name or property key, with an optional =VALUE.", valueName: "target"))
    var target: String

    func run() throws {
        let name: String
        var expected: JSONValue?
        if let equals = target.firstIndex(of: "=") {
            name = String(target[..<equals])
            expected = try JSONText.value(String(target[target.index(after: equals)...]), what: "the =VALUE")
        } else {
            name = target
        }
        guard !name.isEmpty else { throw CommandFailure(.usage, "the target needs a name before \"=\"") }
        let options = self.options
        var daemon = try options.daemon()
        let waitLimit = options.timeout(default: nil)
        let deadline = BlockingDeadline(timeout: waitLimit)
        // The subscriptions themselves get the usual reply timeout, but never more than the wait's limit.
        if let waitLimit, let reply = daemon.replyTimeout, waitLimit < reply { daemon.replyTimeout = waitLimit }

        let streams = EventStreams(daemon: daemon)
        let patterns: JSONValue = [.string(name)]
        let first: [BusEvent]
        do {
            // Observe first: once Watch's first reply (the current values) is in, no notification can be missed.
            let notifications = try streams.subscribe(.notifications, ["patterns": patterns])
            first = notifications + (try streams.subscribe(.properties, ["patterns": patterns, "initial": true]))
        } catch let failure as CommandFailure where failure.status == .timedOut {
            throw timedOut(waitLimit)
        }
        var batch = first
        while true {
            if let event = batch.first(where: { matches($0, expected) }) {
                var output = OutputBuffer.standardOutput()
                output.line(
                    EventFormatter(terminal: Terminal.standardOutput(), json: options.json, tagged: true)
                        .line(for: event))
                output.flush()
                return
            }
            guard let next = try streams.next(deadline: deadline) else { throw timedOut(waitLimit) }
            batch = next
        }
    }

    private func matches(_ event: BusEvent, _ expected: JSONValue?) -> Bool {
        switch event {
        case .change(let change):
            guard change["deleted"]?.boolValue != true, let value = change["value"] else { return false }
            return expected.map { $0 == value } ?? true
        case .notification(let notification):
            guard let expected else { return true }
            return (notification["userInfo"] ?? .null) == expected
        }
    }

    private func timedOut(_ limit: Duration?) -> CommandFailure {
        let seconds =
            limit.map { " after \(Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18)s" } ?? ""
        return CommandFailure(.timedOut, "timed out\(seconds) waiting for \(target)")
    }
}
