import BeaconProtocol

/// Reads the members of a reply object, throwing ``BeaconError/Code/invalidReply`` for a missing or mistyped
/// member.
struct ReplyReader {
    let members: [String: JSONValue]
    let context: String

    init(_ members: [String: JSONValue], _ context: String) {
        self.members = members
        self.context = context
    }

    init(_ value: JSONValue?, _ context: String) throws(BeaconError) {
        guard let members = value?.objectValue else { throw .invalidReply("\(context) is not an object") }
        self.init(members, context)
    }

    func string(_ name: String) throws(BeaconError) -> String {
        guard let value = members[name]?.stringValue else { throw missing(name, "a string") }
        return value
    }

    func optionalString(_ name: String) -> String? {
        members[name]?.stringValue
    }

    func int(_ name: String) throws(BeaconError) -> Int64 {
        guard let value = members[name]?.intValue else { throw missing(name, "an integer") }
        return value
    }

    func optionalInt(_ name: String) -> Int64? {
        members[name]?.intValue
    }

    func bool(_ name: String, default fallback: Bool) -> Bool {
        members[name]?.boolValue ?? fallback
    }

    func array(_ name: String) throws(BeaconError) -> [JSONValue] {
        guard let value = members[name]?.arrayValue else { throw missing(name, "an array") }
        return value
    }

    /// The member's value, `nil` when absent or `null`.
    func value(_ name: String) -> JSONValue? {
        guard let value = members[name], !value.isNull else { return nil }
        return value
    }

    private func missing(_ name: String, _ kind: String) -> BeaconError {
        .invalidReply("\(context): \"\(name)\" is missing or not \(kind)")
    }
}
