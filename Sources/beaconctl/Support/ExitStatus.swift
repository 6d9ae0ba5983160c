/// The exit statuses of `beaconctl`, listed in `beaconctl --help`.
enum ExitStatus: Int32, CaseIterable {
    /// The command did what was asked (`wait`: the event was seen).
    case success = 0
    /// The daemon answered with a varlink error (a missing key, a version mismatch, a read-only key, ...).
    case daemonError = 1
    /// The command line is wrong: unknown command or option, missing or invalid argument.
    case usage = 2
    /// No daemon accepts connections at the address.
    case cannotConnect = 3
    /// No reply, or for `wait` no matching event, before `--timeout` ran out.
    case timedOut = 4
    /// The daemon closed the connection or sent something that is not a varlink reply.
    case connectionLost = 5

    /// The explanation shown in `--help`.
    var summary: String {
        switch self {
        case .success: return "success (wait: the event was seen)"
        case .daemonError: return "the daemon answered with a varlink error"
        case .usage: return "usage error: bad command, option or argument"
        case .cannotConnect: return "cannot connect: no daemon at the address"
        case .timedOut: return "timed out (wait: no matching event in time)"
        case .connectionLost: return "connection lost, or an invalid reply"
        }
    }

    /// The exit-status section of the root command's help.
    static var helpText: String {
        "EXIT STATUS:\n" + allCases.map { "  \($0.rawValue)  \($0.summary)" }.joined(separator: "\n")
    }
}

/// A failure that ends the command: a one-line message for standard error and the exit status.
struct CommandFailure: Error {
    var status: ExitStatus
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }
}
