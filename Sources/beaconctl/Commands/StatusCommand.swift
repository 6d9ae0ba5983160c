import ArgumentParser
import BeaconProtocol

/// `beaconctl status`: the daemon's state.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the daemon's version, uptime, address, clients and counters.",
        discussion: """
            The Settings line counts the schema files, the keys and patterns they and the registrations \
            declare, the registrations, the lockdown files and their rules; a Problem line follows for every \
            part of those files the daemon skipped (FILE:LINE: PROBLEM; beaconctl schemas shows them all). \
            A Provider line shows each provided subtree (io.beacon.Providers; beacon-fleet's fleet.prefixes): \
            its provider, and, when its writes fail, since when and why. \
            With --json prints {"status":{...}} as io.beacon.Daemon.Status returns it.
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let reply = try options.daemon().call(IOBeaconDaemon.Status.method)
        var output = OutputBuffer.standardOutput()
        if options.json {
            output.line(JSONText.compact(reply))
            output.flush()
            return
        }
        let terminal = Terminal.standardOutput()
        var status = reply["status"]?.objectValue ?? [:]
        func take(_ name: String) -> JSONValue? { status.removeValue(forKey: name) }
        func text(_ value: JSONValue?) -> String {
            guard let value else { return "?" }
            return value.stringValue ?? JSONText.compact(value)
        }
        var rows: [(String, String)] = []
        let software = take("software")
        let pid = take("pid")
        let uid = take("uid")
        rows.append(("Daemon", "beacond \(text(software)) (pid \(text(pid)), uid \(text(uid)))"))
        rows.append(("Address", text(take("address"))))
        if let started = take("startedUsec")?.intValue {
            let uptime = TimeText.duration(microseconds: TimeText.nowMicroseconds() - started)
            rows.append(("Started", "\(TimeText.localTime(microseconds: started)) (up \(uptime))"))
        }
        rows.append(("Store", text(take("store"))))
        rows.append(("Clients", "\(text(take("clients"))) (\(text(take("subscriptions"))) subscriptions)"))
        rows.append(("Properties", "\(text(take("properties"))) (version \(text(take("version"))))"))
        rows.append(("Notifications", "\(text(take("sequence"))) posted"))
        if let lifecycle = take("lifecycle") {
            rows.append(("Lifecycle", text(lifecycle)))
        }
        if let settings = take("settings")?.objectValue {
            func count(_ name: String, _ noun: String) -> String {
                let number = settings[name]?.intValue
                return "\(number.map(String.init) ?? "?") \(noun)\(number == 1 ? "" : "s")"
            }
            rows.append(
                (
                    "Settings",
                    "\(count("schemaFiles", "schema file")) (\(count("schemaKeys", "key")), "
                        + "\(count("registrations", "registration"))), "
                        + "\(count("lockdownFiles", "lockdown file")) (\(count("locks", "lock")))"
                ))
            for problem in settings["problems"]?.arrayValue ?? [] {
                rows.append(("Problem", SchemasCommand.problemText(problem, on: Terminal(colors: false, width: nil))))
            }
        }
        if let bridge = take("bridge")?.objectValue {
            for bus in bridge.keys.sorted() {
                rows.append(("D-Bus bridge", "\(bus): \(text(bridge[bus]))"))
            }
        }
        for state in take("providers")?.arrayValue ?? [] {
            rows.append(("Provider", Self.providerText(state)))
        }
        for name in status.keys.sorted() {
            rows.append((name, text(status[name])))
        }
        for line in LabelledLines.render(rows, on: terminal) { output.line(line) }
        output.flush()
    }

    /// `fleet.** by beacon-fleet (pid 42): unavailable since 10:02:03 (2 min): no etcd quorum`.
    static func providerText(_ state: JSONValue) -> String {
        let subtrees = (state["subtrees"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", ")
        var text = subtrees
        if let pid = state["pid"]?.intValue {
            text += " by \(state["command"]?.stringValue ?? "pid") (pid \(pid))"
        } else {
            text += " (no provider)"
        }
        guard state["available"]?.boolValue != true else { return text + ": available" }
        text += ": unavailable"
        if let since = state["sinceUsec"]?.intValue {
            let duration = TimeText.duration(microseconds: TimeText.nowMicroseconds() - since)
            text += " since \(TimeText.localTime(microseconds: since)) (\(duration))"
        }
        if let reason = state["reason"]?.stringValue { text += ": " + reason }
        return text
    }
}
