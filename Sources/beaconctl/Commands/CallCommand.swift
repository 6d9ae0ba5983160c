import ArgumentParser
import BeaconBlockingClient
import BeaconProtocol

/// `beaconctl call METHOD [JSON]`: any varlink call.
struct CallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call any varlink method and print the reply.",
        discussion: """
            PARAMETERS is a JSON object, e.g. call io.beacon.Properties.Get '{"key":"user.name"}'. Prints the \
            reply's parameters as indented JSON (--json: compact, one line). With --more the method may stream: \
            every reply is printed as it arrives, one per line with --json, until the last reply or --limit. \
            With --oneway the call is sent without asking for a reply and nothing is printed.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var stream: StreamOptions

    @Flag(help: "Ask for streamed replies (\"more\": true).")
    var more = false

    @Flag(help: "Ask for no reply (\"oneway\": true).")
    var oneway = false

    @Argument(help: "The fully qualified method, e.g. io.beacon.Daemon.Status.")
    var method: String

    @Argument(help: "The parameters: a JSON object.")
    var parameters: String?

    func validate() throws {
        if more && oneway { throw ValidationError("--more and --oneway exclude each other") }
        if let parameters {
            guard case .object? = try? JSONValue(parsing: parameters) else {
                throw ValidationError("the parameters must be a JSON object, e.g. '{\"key\":\"a\"}'")
            }
        }
    }

    func run() throws {
        let daemon = try options.daemon()
        var members: [String: JSONValue] = [:]
        if let parameters, case .object(let object)? = try? JSONValue(parsing: parameters) { members = object }
        let call = VarlinkCall(method: method, parameters: members, more: more, oneway: oneway)
        let connection = try daemon.connect(timeout: daemon.replyTimeout)
        var output = OutputBuffer.standardOutput()
        do throws(BlockingVarlinkError) {
            try connection.send(call, deadline: BlockingDeadline(timeout: daemon.replyTimeout))
            if oneway { return }
            var count = 0
            var deadline = BlockingDeadline(timeout: daemon.replyTimeout)
            while true {
                let reply = try connection.receive(deadline: deadline)
                if let error = reply.varlinkError { throw BlockingVarlinkError(remote: error) }
                output.line(
                    options.json ? JSONText.compact(reply.parameters) : JSONText.pretty(.object(reply.parameters)))
                output.flush()
                count += 1
                if !reply.continues { return }
                if let limit = stream.limit, count >= limit { return }
                // Later replies of a stream come when something happens: no limit on the wait.
                deadline = .never
            }
        } catch {
            throw daemon.failure(error)
        }
    }
}
