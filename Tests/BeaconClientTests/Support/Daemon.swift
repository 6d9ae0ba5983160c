import BeaconClient
import BeaconTestSupport

extension TestDaemon {
    /// The daemon's socket as the client library's address.
    var clientAddress: BeaconAddress { BeaconAddress(socketPath: socketPath) }
}
