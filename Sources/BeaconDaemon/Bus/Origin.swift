import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Who made a change or posted a notification: the peer credentials of a connection.
public struct Origin: Sendable, Hashable {
    public var uid: UInt32
    public var pid: Int32
    /// The process name from `/proc/PID/comm`, when it could be read.
    public var command: String?

    public init(uid: UInt32, pid: Int32, command: String?) {
        self.uid = uid
        self.pid = pid
        self.command = command
    }

    /// The daemon itself (its own uid and pid), for changes it makes on its own behalf.
    public static let daemon = Origin(uid: getuid(), pid: getpid(), command: "beacond")

    var json: JSONValue {
        var object: [String: JSONValue] = ["uid": .int(Int64(uid)), "pid": .int(Int64(pid))]
        if let command { object["command"] = .string(command) }
        return .object(object)
    }

    /// Appends `{"uid":…,"pid":…,"command":…}`.
    func encode(into buffer: inout [UInt8]) {
        JSONWriter.appendASCII("{\"uid\":", to: &buffer)
        JSONWriter.appendInt(Int64(uid), to: &buffer)
        JSONWriter.appendASCII(",\"pid\":", to: &buffer)
        JSONWriter.appendInt(Int64(pid), to: &buffer)
        if let command {
            JSONWriter.appendASCII(",\"command\":", to: &buffer)
            JSONWriter.appendString(command, to: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }
}
