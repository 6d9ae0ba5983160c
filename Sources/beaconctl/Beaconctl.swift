import ArgumentParser
import BeaconBlockingClient
import BeaconProtocol

/// `beaconctl`: inspect and drive the Beacon bus from a terminal or a shell script.
@main
struct Beaconctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beaconctl",
        abstract: "Inspect and drive the Beacon bus: properties, notifications, clients.",
        discussion: """
            Talks varlink to beacond over its Unix socket. Every command takes --address, --json and \
            --timeout; streams (watch, monitor, call --more) also take --limit.

            VALUES: a value given on the command line (set, post, wait KEY=VALUE) is read as JSON when it \
            parses as JSON (42, -1.5, true, null, "text", [1,2], {"a":1}), otherwise it is taken as a plain \
            string; text that starts like JSON ({, [ or ") but does not parse is a usage error.

            OUTPUT: --json prints the parameters of the daemon's reply as one JSON object; streams print one \
            JSON object per line. Without --json, output is text for people, coloured only when standard \
            output is a terminal and NO_COLOR is unset.

            ERRORS: an error reply of the daemon is printed on standard error as its varlink error name and \
            a one-line explanation.

            \(ExitStatus.helpText)
            """,
        version: BeaconVersion.current,
        subcommands: [
            StatusCommand.self, ListCommand.self, TreeCommand.self, GetCommand.self, SetCommand.self,
            UnsetCommand.self, DescribeCommand.self, ResetCommand.self, DumpCommand.self, LoadCommand.self,
            SchemasCommand.self, WatchCommand.self, MonitorCommand.self, PostCommand.self, WaitCommand.self,
            ClientsCommand.self, DeviceCommand.self, IntrospectCommand.self, CallCommand.self,
        ]
    )

    /// Runs the command; maps every failure to a documented exit status and a message on standard error.
    static func main() {
        let status: ExitStatus
        do {
            if let command = FastPath.command(for: CommandLine.arguments.dropFirst()) {
                try command()
                return
            }
            var command = try parseAsRoot(negativeNumbersAsValues(Array(CommandLine.arguments.dropFirst())))
            try command.run()
            return
        } catch let failure as CommandFailure {
            status = failure.status
            OutputBuffer.standardError(errorPrefix() + failure.message)
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            status = .usage
            OutputBuffer.standardError(fullMessage(for: error))
        }
        exit(withError: ExitCode(status.rawValue))
    }

    /// `set offset -1.5`: the argument parser takes every argument that starts with "-" for an option, so a
    /// negative number given to `set` or `post` (whose options are all words) is moved after a `--` at the
    /// end, where it is read as the value it is. Arguments that already follow a `--` are left as they are.
    static func negativeNumbersAsValues(_ arguments: [String]) -> [String] {
        guard let command = arguments.first, ["set", "post"].contains(command), !arguments.contains("--") else {
            return arguments
        }
        func isNegativeNumber(_ argument: String) -> Bool {
            let bytes = Array(argument.utf8)
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "-"),
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[1])
            else { return false }
            switch try? JSONValue(parsing: argument) {
            case .int?, .double?: return true
            default: return false
            }
        }
        var options: [String] = []
        var values: [String] = []
        for argument in arguments {
            if isNegativeNumber(argument) { values.append(argument) } else { options.append(argument) }
        }
        return values.isEmpty ? arguments : options + ["--"] + values
    }

    private static func errorPrefix() -> String {
        Terminal.standardError().paint("Error:", .boldRed) + " "
    }
}
