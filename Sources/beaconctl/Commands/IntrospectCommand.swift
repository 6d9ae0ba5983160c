import ArgumentParser
import BeaconProtocol

/// `beaconctl introspect [INTERFACE]`: the daemon's varlink interfaces.
struct IntrospectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "introspect",
        abstract: "List the daemon's varlink interfaces, or print one interface's description (IDL).",
        discussion: """
            Without INTERFACE calls org.varlink.service.GetInfo and prints the vendor, product, version, URL \
            and the interfaces. With INTERFACE calls org.varlink.service.GetInterfaceDescription and prints the \
            description in varlink IDL. With --json prints the reply's parameters.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "An interface name, e.g. io.beacon.Properties.")
    var interface: String?

    func run() throws {
        let daemon = try options.daemon()
        var output = OutputBuffer.standardOutput()
        if let interface {
            let reply = try daemon.call(
                VarlinkServiceInterface.Names.getInterfaceDescription, ["interface": .string(interface)])
            if options.json {
                output.line(JSONText.compact(reply))
            } else {
                let description = reply["description"]?.stringValue ?? ""
                output.write(description.hasSuffix("\n") ? description : description + "\n")
            }
        } else {
            let reply = try daemon.call(VarlinkServiceInterface.Names.getInfo)
            if options.json {
                output.line(JSONText.compact(reply))
            } else {
                let terminal = Terminal.standardOutput()
                for field in ["vendor", "product", "version", "url"] {
                    if let value = reply[field]?.stringValue, !value.isEmpty {
                        output.line(terminal.paint(field + ":", .bold) + " " + value)
                    }
                }
                output.line(terminal.paint("interfaces:", .bold))
                for name in reply["interfaces"]?.arrayValue ?? [] {
                    output.line("  " + terminal.paint(name.stringValue ?? JSONText.compact(name), .cyan))
                }
            }
        }
        output.flush()
    }
}
