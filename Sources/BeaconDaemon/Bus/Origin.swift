import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Who made a change or posted a notification: the peer credentials of a connection.
public struct Origin: Sendable, Hashable {
    public let uid: UInt32
    public let pid: Int32
    /// The process name from `/proc/PID/comm`, when it could be read.
    public let command: String?
    /// `{"uid":…,"pid":…,"command":…,"machine":…}`, encoded once. The machine (for a change a provider published
    /// from elsewhere) is kept only here: an origin is copied with every change, and one more field would cost
    /// every Set its copies and reference counting.
    private let encoded: [UInt8]

    public init(uid: UInt32, pid: Int32, command: String?, machine: String? = nil) {
        self.uid = uid
        self.pid = pid
        self.command = command
        var encoded: [UInt8] = []
        JSONWriter.appendASCII("{\"uid\":", to: &encoded)
        JSONWriter.appendInt(Int64(uid), to: &encoded)
        JSONWriter.appendASCII(",\"pid\":", to: &encoded)
        JSONWriter.appendInt(Int64(pid), to: &encoded)
        if let command {
            JSONWriter.appendASCII(",\"command\":", to: &encoded)
            JSONWriter.appendString(command, to: &encoded)
        }
        if let machine {
            JSONWriter.appendASCII(",\"machine\":", to: &encoded)
            JSONWriter.appendString(machine, to: &encoded)
        }
        encoded.append(UInt8(ascii: "}"))
        self.encoded = encoded
    }

    /// The daemon itself (its own uid and pid), for changes it makes on its own behalf.
    public static let daemon = Origin(uid: getuid(), pid: getpid(), command: "beacond")

    /// Appends `{"uid":…,"pid":…,"command":…}`.
    func encode(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: encoded)
    }

    /// `{"uid":…,"pid":…,"command":…}`.
    var encodedJSON: [UInt8] { encoded }

    /// The machine the change came from, for the store. Read back from the encoded form, where only a machine
    /// field can hold `,"machine":` unescaped, so that origins without one cost a scan of a few dozen bytes.
    var machine: String? {
        guard encoded.containsBytes(Self.machineField),
            case .object(let members) = try? JSONValue(parsing: encoded),
            case .string(let machine)? = members["machine"]
        else { return nil }
        return machine
    }

    private static let machineField = Array(#","machine":"#.utf8)
}
