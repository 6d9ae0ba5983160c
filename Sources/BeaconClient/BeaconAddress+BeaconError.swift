import BeaconBlockingClient

extension BeaconAddress {
    /// Parses `unix:PATH`. Throws ``BeaconError/Code/invalidAddress`` for anything else.
    public init(_ address: String) throws(BeaconError) {
        do {
            try self.init(parsing: address)
        } catch {
            throw .invalidAddress(address)
        }
    }

    /// The address a client uses when none is given, resolved from `environment` (reads nothing else):
    /// `BEACON_ADDRESS` when set, else `$XDG_RUNTIME_DIR/beacon.sock`, else `/tmp/beacon-UID/beacon.sock`.
    ///
    /// Throws ``BeaconError/Code/invalidAddress`` when `BEACON_ADDRESS` is set but is not `unix:PATH`.
    public static func `default`(environment: [String: String] = processEnvironment()) throws(BeaconError)
        -> BeaconAddress
    {
        do {
            return try fromEnvironment(environment)
        } catch {
            throw .invalidAddress(environment["BEACON_ADDRESS"] ?? "")
        }
    }
}
