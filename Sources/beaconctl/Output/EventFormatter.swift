import BeaconProtocol

/// Lines for stream events: JSON objects, or text for people.
///
/// JSON: a change is printed as the daemon's `Change` object, a notification as its `Notification` object;
/// ``tagged`` adds `"type": "change"` or `"type": "notification"` (monitor, wait). Text:
/// `v42  power.level = 80  was 79  by beaconctl[1234] uid 1000`,
/// `#7  app.saved {"doc":"a"}  by beaconctl[1240] uid 1000`, prefixed with the type when tagged.
struct EventFormatter {
    var terminal: Terminal
    var json: Bool
    var tagged: Bool

    func line(for event: BusEvent) -> String {
        switch event {
        case .change(let change):
            if json { return JSONText.compact(tagged ? change.merging(["type": "change"]) { $1 } : change) }
            return (tagged ? terminal.paint("change", .yellow) + "        " : "") + text(change: change)
        case .notification(let notification):
            if json {
                return JSONText.compact(tagged ? notification.merging(["type": "notification"]) { $1 } : notification)
            }
            return (tagged ? terminal.paint("notification", .magenta) + "  " : "") + text(notification: notification)
        }
    }

    private func text(change: [String: JSONValue]) -> String {
        let version = "v" + (change["version"].map { JSONText.compact($0) } ?? "?")
        let key = change["key"]?.stringValue ?? "?"
        var line = terminal.paint(version, .dim) + "  " + terminal.paint(key, .boldCyan)
        if change["deleted"]?.boolValue == true || change["value"] == nil {
            line += " " + terminal.paint("deleted", .red)
        } else if let value = change["value"] {
            line += " = " + JSONText.compact(value)
        }
        if let old = change["old"] {
            line += "  " + terminal.paint("was", .dim) + " " + JSONText.compact(old)
        }
        return line + origin(change["origin"])
    }

    private func text(notification: [String: JSONValue]) -> String {
        let sequence = "#" + (notification["sequence"].map { JSONText.compact($0) } ?? "?")
        let name = notification["name"]?.stringValue ?? "?"
        var line = terminal.paint(sequence, .dim) + "  " + terminal.paint(name, .boldCyan)
        if let object = notification["object"]?.stringValue {
            line += " " + terminal.paint("object=" + object, .dim)
        }
        if let info = notification["userInfo"], !info.isNull {
            line += " " + JSONText.compact(info)
        }
        return line + origin(notification["origin"])
    }

    private func origin(_ origin: JSONValue?) -> String {
        guard let origin else { return "" }
        return "  " + terminal.paint("by " + EventFormatter.originText(origin), .dim)
    }

    /// `command[pid] uid N`, or `pid N uid N` when the command is unknown; a change made on another machine (a
    /// fleet key) has the machine first, `kiosk-2:command[pid] uid N`, since its pid is no process of this one.
    static func originText(_ origin: JSONValue) -> String {
        let pid = origin["pid"].map { JSONText.compact($0) } ?? "?"
        let uid = origin["uid"].map { JSONText.compact($0) } ?? "?"
        let machine = origin["machine"]?.stringValue.map { $0 + ":" } ?? ""
        if let command = origin["command"]?.stringValue { return "\(machine)\(command)[\(pid)] uid \(uid)" }
        return "\(machine)pid \(pid) uid \(uid)"
    }
}
