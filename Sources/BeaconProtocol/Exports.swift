// Beacon's protocol is varlink: everything that imports BeaconProtocol sees the Varlink module's messages, JSON
// values and interface descriptions too.
@_exported import Varlink
