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
            With --oneway the call is sent without asking for a reply and nothing is printed. The parameters are \
            first checked against the daemon's own description of the method's interface: a parameter the method \
            does not declare, a required one missing or one of another type is a usage error that names it, and \
            nothing is sent; --unchecked sends them as given.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var stream: StreamOptions

    @Flag(help: "Ask for streamed replies (\"more\": true).")
    var more = false

    @Flag(help: "Ask for no reply (\"oneway\": true).")
    var oneway = false

    @Flag(help: "Send the parameters as given, without checking them against the interface.")
    var unchecked = false

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
        if !unchecked {
            let problem: String?
            do throws(BlockingVarlinkError) {
                problem = try self.problem(with: members, on: connection, timeout: daemon.replyTimeout)
            } catch {
                throw daemon.failure(error)
            }
            if let problem { throw CommandFailure(.usage, problem) }
        }
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

    /// What is wrong with `parameters` by the daemon's own description of the method's interface: a parameter the
    /// method does not declare, a required one missing, or one of another type. `nil` when nothing is, or when the
    /// daemon does not describe the interface or the method: the call's own reply then says why.
    private func problem(
        with parameters: [String: JSONValue], on connection: BlockingVarlinkConnection, timeout: Duration?
    ) throws(BlockingVarlinkError) -> String? {
        guard let dot = method.lastIndex(of: "."), dot != method.startIndex else { return nil }
        let member = String(method[method.index(after: dot)...])
        let describe = VarlinkCall(
            method: VarlinkServiceInterface.Names.getInterfaceDescription,
            parameters: ["interface": .string(String(method[..<dot]))])
        try connection.send(describe, deadline: BlockingDeadline(timeout: timeout))
        let reply = try connection.receive(deadline: BlockingDeadline(timeout: timeout))
        if let error = reply.varlinkError {
            // An interface the daemon does not describe: the call's own reply says why. Any other error (a refused
            // connection) is the answer.
            if error.name == VarlinkServiceInterface.Names.interfaceNotFound { return nil }
            throw BlockingVarlinkError(remote: error)
        }
        guard case .string(let text)? = reply.parameters["description"],
            let interface = try? VarlinkInterface(parsing: text), let declared = interface.method(named: member)
        else { return nil }
        // A misspelled parameter first: the required one it was meant to be is missing too.
        let names = declared.input.map(\.name)
        if let unknown = parameters.keys.filter({ !names.contains($0) }).sorted().first {
            return "\(method) has no parameter \(unknown); "
                + (names.isEmpty ? "it takes none" : "it takes " + names.joined(separator: ", "))
        }
        guard let name = interface.invalidParameter(method: member, in: parameters),
            let field = declared.input.first(where: { $0.name == name })
        else { return nil }
        guard let value = parameters[name], !value.isNull else { return "\(method) needs \(name) (\(field.type))" }
        let given = JSONText.compact(value)
        return "\(method)'s \(name) must be \(field.type), not "
            + (given.count > 60 ? given.prefix(57) + "..." : given)
    }
}
