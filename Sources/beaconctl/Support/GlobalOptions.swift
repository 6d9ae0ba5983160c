import ArgumentParser
import BeaconBlockingClient
import BeaconProtocol

/// The options every subcommand takes: where the daemon is, how to print, how long to wait.
struct GlobalOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The daemon's address (default: $BEACON_ADDRESS, else $XDG_RUNTIME_DIR/beacon.sock, else /tmp/beacon-UID/beacon.sock).",
            valueName: "unix:PATH"))
    var address: String?

    @Flag(help: "Print JSON: one object per command, or for streams one object per line.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Seconds to wait for the daemon's reply (default 10). For wait: for the event (default: no limit). For streams: for the subscription to start.",
            valueName: "seconds"))
    var timeout: Double?

    func validate() throws {
        if let problem = settings.problem { throw ValidationError(problem) }
    }

    /// The options as plain values.
    var settings: CommandSettings {
        CommandSettings(address: address, json: json, timeout: timeout)
    }

    /// The daemon these options point at.
    func daemon() throws -> Daemon {
        try settings.daemon()
    }

    /// The `--timeout`, or `fallback` when it was not given (`nil`: no limit).
    func timeout(default fallback: Duration?) -> Duration? {
        settings.timeout(default: fallback)
    }
}

/// The values of ``GlobalOptions``, also filled in without the argument parser by ``FastPath``.
struct CommandSettings {
    var address: String?
    var json: Bool
    var timeout: Double?

    /// How long one-shot commands wait for a reply when `--timeout` is not given.
    static let defaultReplyTimeout: Duration = .seconds(10)

    /// What is wrong with the values, as a usage error message; `nil` when they are valid.
    var problem: String? {
        if let timeout, !(timeout > 0 && timeout.isFinite) {
            return "--timeout must be a positive number of seconds, not \(timeout)"
        }
        if let address, !address.hasPrefix("unix:") || address.utf8.count <= 5 {
            return "--address must be unix:PATH, not \"\(address)\""
        }
        return nil
    }

    /// The `--timeout`, or `fallback` when it was not given (`nil`: no limit).
    func timeout(default fallback: Duration?) -> Duration? {
        timeout.map { Duration.seconds($0) } ?? fallback
    }

    /// The daemon these settings point at.
    func daemon() throws -> Daemon {
        let resolved: BeaconAddress
        do throws(BlockingVarlinkError) {
            if let address {
                resolved = try BeaconAddress(parsing: address)
            } else {
                resolved = try BeaconAddress.fromEnvironment()
            }
        } catch {
            throw CommandFailure(.usage, error.message)
        }
        return Daemon(address: resolved, replyTimeout: timeout(default: CommandSettings.defaultReplyTimeout))
    }
}

/// The daemon a command talks to, and how long a reply may take.
struct Daemon {
    var address: BeaconAddress
    var replyTimeout: Duration?

    /// A new connection; `timeout` bounds the connect.
    func connect(timeout: Duration?) throws -> BlockingVarlinkConnection {
        do {
            return try BlockingVarlinkConnection(address: address, timeout: timeout)
        } catch {
            throw failure(error)
        }
    }

    /// Connects, calls `method` and returns the reply's parameters, all within the reply timeout.
    func call(_ method: String, _ parameters: [String: JSONValue] = [:]) throws -> [String: JSONValue] {
        let connection = try connect(timeout: replyTimeout)
        do {
            return try connection.call(VarlinkCall(method: method, parameters: parameters), timeout: replyTimeout)
        } catch {
            throw failure(error)
        }
    }

    /// The command failure for a connection error or an error reply.
    func failure(_ error: BlockingVarlinkError) -> CommandFailure {
        ErrorText.failure(error, address: address.description)
    }
}
