// `BeaconAddress` is part of this module's API, and the blocking connection was part of this module before it
// moved to `BeaconBlockingClient`: an `import BeaconClient` still brings them.
@_exported import BeaconBlockingClient
