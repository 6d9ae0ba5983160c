#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the daemon listens: a Unix socket, written `unix:PATH`.
///
/// ``fromEnvironment(_:)`` follows the same rules as `beacond`: `BEACON_ADDRESS` when set, else
/// `$XDG_RUNTIME_DIR/beacon.sock`, else `/tmp/beacon-UID/beacon.sock`. `BeaconClient` adds the same two
/// operations throwing its `BeaconError`: `BeaconAddress(_:)` and `BeaconAddress.default(environment:)`.
public struct BeaconAddress: Sendable, Hashable, CustomStringConvertible {
    /// The path of the Unix socket.
    public var socketPath: String

    /// The address of the socket at `socketPath`.
    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// Parses `unix:PATH`. Throws ``BlockingVarlinkError/Code/invalidAddress`` for anything else.
    public init(parsing address: String) throws(BlockingVarlinkError) {
        guard address.hasPrefix("unix:"), address.utf8.count > 5 else {
            throw BlockingVarlinkError(code: .invalidAddress, message: "expected unix:PATH, got \"\(address)\"")
        }
        self.init(socketPath: String(address.dropFirst(5)))
    }

    /// The address a client uses when none is given, resolved from `environment` (reads nothing else).
    ///
    /// Throws ``BlockingVarlinkError/Code/invalidAddress`` when `BEACON_ADDRESS` is set but is not `unix:PATH`.
    public static func fromEnvironment(_ environment: [String: String] = processEnvironment())
        throws(BlockingVarlinkError) -> BeaconAddress
    {
        if let explicit = environment["BEACON_ADDRESS"], !explicit.isEmpty {
            return try BeaconAddress(parsing: explicit)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return BeaconAddress(socketPath: runtime + "/beacon.sock")
        }
        return BeaconAddress(socketPath: "/tmp/beacon-\(getuid())/beacon.sock")
    }

    /// The current process environment.
    public static func processEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }

    /// `unix:PATH`.
    public var description: String { "unix:" + socketPath }
}
