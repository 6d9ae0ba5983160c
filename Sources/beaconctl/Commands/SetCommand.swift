import ArgumentParser
import BeaconBlockingClient
import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `beaconctl set KEY VALUE`: stores a value.
struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store a value under a key.",
        discussion: """
            VALUE is read as JSON when it parses as JSON, else stored as a plain string: `set user.name Ada` \
            stores "Ada", `set volume 42` stores the number 42, `set flag '"true"'` the string "true", and \
            `set offset -1.5` the number -1.5. A VALUE that starts like JSON ({, [ or ") but does not parse is \
            an error naming where it fails (status 2), not a string; --string stores any VALUE as text, as it \
            is. Prints nothing; with --json prints {"version":N}, the version of the change, or \
            {"version":N,"unchanged":true} when the key already stored the value (nothing changes then). Any \
            other value that starts with "-" comes after "--": `beaconctl set note -- -x`.

            A value the key's schema refuses exits with status 1 (io.beacon.Properties.TypeMismatch, with the \
            type the schema expects and what is wrong), and so does a key a lockdown file locks \
            (io.beacon.Properties.Locked, with the file and line of the rule); beaconctl describe KEY shows both.

            With --ephemeral the command keeps running after the value is stored (its --json output is \
            printed first): the property exists as long as the command runs. On a terminal it says so on \
            standard error.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(
        help:
            "Keep the property only while this command runs: it stays connected until it is interrupted (or the daemon stops), and the daemon deletes the property when the connection closes."
    )
    var ephemeral = false

    @Flag(help: "Store VALUE as a string, as it is, even when it is (or starts like) JSON.")
    var string = false

    @Option(
        name: .customLong("if-version"),
        help: ArgumentHelp(
            "Store only when the key's current version is N (0: only when the key does not exist); else exit 1 with io.beacon.Properties.VersionMismatch.",
            valueName: "N"))
    var ifVersion: Int64?

    @Argument(help: "The property's key.")
    var key: String

    @Argument(help: "The value: JSON, or a plain string.")
    var value: String

    func validate() throws {
        if let ifVersion, ifVersion < 0 { throw ValidationError("--if-version must be 0 or more, not \(ifVersion)") }
    }

    func run() throws {
        var parameters: [String: JSONValue] = [
            "key": .string(key), "value": try JSONText.value(value, string: string),
        ]
        if ephemeral { parameters["ephemeral"] = true }
        if let ifVersion { parameters["ifVersion"] = .int(ifVersion) }
        let daemon = try options.daemon()
        let connection = try daemon.connect(timeout: daemon.replyTimeout)
        let call = VarlinkCall(method: IOBeaconProperties.Set.method, parameters: parameters)
        do {
            let reply = try connection.call(call, timeout: daemon.replyTimeout)
            if options.json {
                var output = OutputBuffer.standardOutput()
                output.line(JSONText.compact(reply))
                output.flush()
            }
            if ephemeral {
                if isatty(2) == 1 {
                    OutputBuffer.standardError(
                        "beaconctl: holding \(key) as an ephemeral property until interrupted (Ctrl-C) or the daemon "
                            + "stops")
                }
                // Nothing more is sent on this connection: receive returns only when the daemon closes it.
                _ = try connection.receive(deadline: .never)
            }
        } catch let error where error.code == .connectionClosed && ephemeral {
            throw CommandFailure(.connectionLost, "\(daemon.address): the daemon closed the connection")
        } catch {
            throw daemon.failure(error)
        }
    }
}
