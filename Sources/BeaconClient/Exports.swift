// `BeaconAddress` is part of this module's API, and the blocking connection was part of this module before it
// moved to `BeaconBlockingClient`: an `import BeaconClient` still brings them.
@_exported import BeaconBlockingClient

// Arbitrary JSON (a notification's userInfo, a raw call's parameters) is a `JSONValue`: an `import BeaconClient`
// brings the type, so that its members (`stringValue`, `intValue`, ...) need no import of BeaconProtocol.
@_exported import enum BeaconProtocol.JSONValue
