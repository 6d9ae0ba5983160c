import ArgumentParser
import BeaconProtocol

/// `beaconctl post NAME [JSON]`: posts a notification.
struct PostCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Post a notification to the current observers.",
        discussion: """
            USERINFO is read as JSON when it parses as JSON, else sent as a plain string; text that starts \
            like JSON ({, [ or ") but does not parse is an error (status 2), unless --string sends it as text. \
            Prints nothing; with --json prints {"sequence":N}, the notification's sequence number.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The notification's name, e.g. app.document.saved.")
    var name: String

    @Argument(help: "The notification's userInfo: JSON, or a plain string.")
    var userInfo: String?

    @Option(help: ArgumentHelp("The sender's object: observers may ask for one object only.", valueName: "OBJECT"))
    var object: String?

    @Flag(help: "Reach observers whose delivery is suspended at once, after what they held.")
    var deliverImmediately = false

    @Flag(help: "Send USERINFO as a string, as it is, even when it is (or starts like) JSON.")
    var string = false

    func run() throws {
        var parameters: [String: JSONValue] = ["name": .string(name)]
        if let userInfo { parameters["userInfo"] = try JSONText.value(userInfo, what: "USERINFO", string: string) }
        if let object { parameters["object"] = .string(object) }
        if deliverImmediately { parameters["deliverImmediately"] = true }
        let reply = try options.daemon().call(IOBeaconNotifications.Post.method, parameters)
        if options.json {
            var output = OutputBuffer.standardOutput()
            output.line(JSONText.compact(reply))
            output.flush()
        }
    }
}
