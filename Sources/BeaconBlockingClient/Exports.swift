import Varlink
// The blocking varlink connection is the VarlinkClient module's; this module adds the Beacon daemon's address.
@_exported import VarlinkClient

extension BlockingVarlinkConnection {
    /// Connects to the daemon at `address`; see ``init(socketPath:timeout:limits:)``.
    public convenience init(address: BeaconAddress, timeout: Duration? = nil, limits: JSONLimits = defaultLimits)
        throws(BlockingVarlinkError)
    {
        try self.init(socketPath: address.socketPath, timeout: timeout, limits: limits)
    }
}
