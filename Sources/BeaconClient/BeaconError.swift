import BeaconBlockingClient
import BeaconProtocol

/// An error of the Beacon client: a varlink error the daemon answered, or a failure on the client's side.
///
/// Every error has a ``code`` to switch on and the qualified varlink ``name``: the daemon's name for errors it
/// sent (`io.beacon.Properties.VersionMismatch`), or a name below `io.beacon.Client` for errors that happen in
/// the client (`io.beacon.Client.NotConnected`); the daemon never sends those.
///
/// ```swift
/// do {
///     try await client.set("user.name", to: "Ada", ifVersion: 41)
/// } catch where error.code == .versionMismatch {
///     print("changed meanwhile, now at version", error.parameters["actual"] ?? nil)
/// }
/// ```
public struct BeaconError: Error, Sendable, CustomStringConvertible {
    /// What kind of error this is. New codes may be added; switch with a `default` case.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: Hashable, Sendable {
            case keyNotFound, versionMismatch, readOnly, invalidKey, invalidPattern, valueTooLarge
            case invalidName, limitExceeded, protocolError, typeMismatch, locked, invalidSchema, storeFailed
            case interfaceNotFound, methodNotFound, methodNotImplemented, invalidParameter, permissionDenied
            case expectedMore, otherRemote, providerUnavailable, outcomeUnknown, providerConflict, notProvider
            case invalidAddress, connectionFailed, connectionClosed, notConnected, invalidReply
            case encodingFailed, decodingFailed, notificationsDropped, cancelled, clientClosed
        }
        fileprivate let base: Base

        /// `io.beacon.Properties.KeyNotFound`: no property is stored under the key.
        public static let keyNotFound = Code(base: .keyNotFound)
        /// `io.beacon.Properties.VersionMismatch`: a compare-and-set found another version.
        public static let versionMismatch = Code(base: .versionMismatch)
        /// `io.beacon.Properties.ReadOnly`: the key lies below a reserved prefix.
        public static let readOnly = Code(base: .readOnly)
        /// `io.beacon.Properties.InvalidKey`.
        public static let invalidKey = Code(base: .invalidKey)
        /// `io.beacon.Properties.InvalidPattern` or `io.beacon.Notifications.InvalidPattern`.
        public static let invalidPattern = Code(base: .invalidPattern)
        /// `io.beacon.Properties.ValueTooLarge`.
        public static let valueTooLarge = Code(base: .valueTooLarge)
        /// `io.beacon.Properties.TypeMismatch`: the value does not conform to the key's schema; the parameters
        /// `expected` and `reason` say how.
        public static let typeMismatch = Code(base: .typeMismatch)
        /// `io.beacon.Properties.Locked`: a lockdown file locks the key; the parameters `file` and `line` name the rule.
        public static let locked = Code(base: .locked)
        /// `io.beacon.Settings.InvalidSchema`: a registered schema has problems, listed in the parameter `problems`.
        public static let invalidSchema = Code(base: .invalidSchema)
        /// `io.beacon.StoreFailed`: the daemon could not make the call's changes durable; nothing changed.
        public static let storeFailed = Code(base: .storeFailed)
        /// `io.beacon.Providers.ProviderUnavailable`: the key's subtree has no provider connected, or its
        /// provider cannot reach where the values live (the parameter `reason` says which); reads still work.
        public static let providerUnavailable = Code(base: .providerUnavailable)
        /// `io.beacon.Providers.OutcomeUnknown`: the write may or may not have been carried out, and may still be
        /// (its provider was sent it and could not learn what became of it); a read of the key tells.
        public static let outcomeUnknown = Code(base: .outcomeUnknown)
        /// `io.beacon.Providers.ProviderConflict`: another provider has an overlapping subtree.
        public static let providerConflict = Code(base: .providerConflict)
        /// `io.beacon.Providers.NotProvider`: the provider number, key or request is not this provider's.
        public static let notProvider = Code(base: .notProvider)
        /// `io.beacon.Notifications.InvalidName`.
        public static let invalidName = Code(base: .invalidName)
        /// `io.beacon.LimitExceeded`: a per-connection or per-user limit of the daemon.
        public static let limitExceeded = Code(base: .limitExceeded)
        /// `io.beacon.ProtocolError`: the peer did not understand a message.
        public static let protocolError = Code(base: .protocolError)
        /// `org.varlink.service.InterfaceNotFound`.
        public static let interfaceNotFound = Code(base: .interfaceNotFound)
        /// `org.varlink.service.MethodNotFound`.
        public static let methodNotFound = Code(base: .methodNotFound)
        /// `org.varlink.service.MethodNotImplemented`.
        public static let methodNotImplemented = Code(base: .methodNotImplemented)
        /// `org.varlink.service.InvalidParameter`.
        public static let invalidParameter = Code(base: .invalidParameter)
        /// `org.varlink.service.PermissionDenied`.
        public static let permissionDenied = Code(base: .permissionDenied)
        /// `org.varlink.service.ExpectedMore`.
        public static let expectedMore = Code(base: .expectedMore)
        /// Another varlink error; see ``BeaconError/name``.
        public static let otherRemote = Code(base: .otherRemote)

        /// The address is not `unix:PATH`.
        public static let invalidAddress = Code(base: .invalidAddress)
        /// The socket could not be connected.
        public static let connectionFailed = Code(base: .connectionFailed)
        /// The connection closed before the reply came (the daemon stopped or dropped the connection). Whether a
        /// call that was in flight took effect is unknown.
        public static let connectionClosed = Code(base: .connectionClosed)
        /// The daemon is not reachable at the moment; the client keeps reconnecting.
        public static let notConnected = Code(base: .notConnected)
        /// A reply that is not valid varlink, or lacks a field the interface promises.
        public static let invalidReply = Code(base: .invalidReply)
        /// A value could not be encoded to JSON.
        public static let encodingFailed = Code(base: .encodingFailed)
        /// A stored value does not decode as the type it was asked for.
        public static let decodingFailed = Code(base: .decodingFailed)
        /// The daemon dropped notifications because this client read too slowly; ``BeaconError/parameters``
        /// holds `count`.
        public static let notificationsDropped = Code(base: .notificationsDropped)
        /// The calling task was cancelled.
        public static let cancelled = Code(base: .cancelled)
        /// ``BeaconClient/close()`` was called.
        public static let clientClosed = Code(base: .clientClosed)

        public var description: String { "\(base)" }
    }

    /// What kind of error this is.
    public var code: Code
    /// The qualified varlink error name, e.g. `io.beacon.Properties.KeyNotFound`.
    public var name: String
    /// The error's parameters as the daemon sent them (for client-side errors, a few descriptive members).
    public var parameters: [String: JSONValue]
    /// A human-readable explanation.
    public var message: String
    /// The error that caused this one, if any (a socket error, a `DecodingError`, ...).
    public var cause: (any Error)?

    public init(
        code: Code,
        name: String,
        parameters: [String: JSONValue] = [:],
        message: String,
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.name = name
        self.parameters = parameters
        self.message = message
        self.cause = cause
    }

    /// The error the daemon (or any varlink peer) answered with.
    public init(_ error: VarlinkError) {
        // A protocol violation found here carries Varlink's local name, the daemon's io.beacon.ProtocolError.
        let code = error.isProtocolError ? .protocolError : Self.codes[error.name] ?? .otherRemote
        self.init(code: code, name: error.name, parameters: error.parameters, message: error.description)
    }

    /// Whether the daemon sent this error (as opposed to a failure in the client).
    public var isRemote: Bool {
        !name.hasPrefix(Self.clientPrefix)
    }

    /// The `key` parameter, when the error concerns one key.
    public var key: String? { parameters["key"]?.stringValue }

    public var description: String {
        if let cause { return "\(name): \(message) (\(cause))" }
        return "\(name): \(message)"
    }

    static let clientPrefix = "io.beacon.Client."

    private static let codes: [String: Code] = [
        IOBeaconProperties.KeyNotFound.name: .keyNotFound,
        IOBeaconProperties.VersionMismatch.name: .versionMismatch,
        IOBeaconProperties.ReadOnly.name: .readOnly,
        IOBeaconProperties.InvalidKey.name: .invalidKey,
        IOBeaconProperties.InvalidPattern.name: .invalidPattern,
        IOBeaconProperties.ValueTooLarge.name: .valueTooLarge,
        IOBeaconProperties.TypeMismatch.name: .typeMismatch,
        IOBeaconProperties.Locked.name: .locked,
        IOBeaconSettings.InvalidSchema.name: .invalidSchema,
        IOBeacon.StoreFailed.name: .storeFailed,
        IOBeaconProviders.ProviderUnavailable.name: .providerUnavailable,
        IOBeaconProviders.OutcomeUnknown.name: .outcomeUnknown,
        IOBeaconProviders.ProviderConflict.name: .providerConflict,
        IOBeaconProviders.NotProvider.name: .notProvider,
        IOBeaconNotifications.InvalidName.name: .invalidName,
        IOBeaconNotifications.InvalidPattern.name: .invalidPattern,
        IOBeacon.LimitExceeded.name: .limitExceeded,
        IOBeacon.ProtocolError.name: .protocolError,
        VarlinkServiceInterface.Names.interfaceNotFound: .interfaceNotFound,
        VarlinkServiceInterface.Names.methodNotFound: .methodNotFound,
        VarlinkServiceInterface.Names.methodNotImplemented: .methodNotImplemented,
        VarlinkServiceInterface.Names.invalidParameter: .invalidParameter,
        VarlinkServiceInterface.Names.permissionDenied: .permissionDenied,
        VarlinkServiceInterface.Names.expectedMore: .expectedMore,
    ]
}

extension BeaconError {
    static func client(
        _ code: Code,
        _ member: String,
        _ message: String,
        parameters: [String: JSONValue] = [:],
        cause: (any Error)? = nil
    ) -> BeaconError {
        BeaconError(code: code, name: clientPrefix + member, parameters: parameters, message: message, cause: cause)
    }

    static func invalidAddress(_ address: String) -> BeaconError {
        client(.invalidAddress, "InvalidAddress", "expected unix:PATH, got \"\(address)\"")
    }

    static func connectionFailed(_ address: BeaconAddress, cause: any Error) -> BeaconError {
        client(.connectionFailed, "ConnectionFailed", "cannot connect to \(address)", cause: cause)
    }

    static var connectionClosed: BeaconError {
        client(.connectionClosed, "ConnectionClosed", "the connection closed before the reply")
    }

    static func notConnected(_ address: BeaconAddress, cause: (any Error)? = nil) -> BeaconError {
        client(.notConnected, "NotConnected", "the daemon at \(address) is not reachable", cause: cause)
    }

    static func invalidReply(_ message: String, cause: (any Error)? = nil) -> BeaconError {
        client(.invalidReply, "InvalidReply", message, cause: cause)
    }

    static func encodingFailed(key: String, cause: any Error) -> BeaconError {
        client(
            .encodingFailed, "EncodingFailed", "cannot encode the value for \(key)", parameters: ["key": .string(key)],
            cause: cause)
    }

    static func decodingFailed(key: String, type: Any.Type, version: Int64?, cause: any Error)
        -> BeaconError
    {
        var parameters: [String: JSONValue] = ["key": .string(key), "type": .string("\(type)")]
        if let version { parameters["version"] = .int(version) }
        return client(
            .decodingFailed, "DecodingFailed", "the value of \(key) does not decode as \(type)",
            parameters: parameters, cause: cause)
    }

    static func notificationsDropped(_ count: Int64, patterns: [String]) -> BeaconError {
        client(
            .notificationsDropped, "NotificationsDropped", "the daemon dropped \(count) notifications",
            parameters: ["count": .int(count), "patterns": .array(patterns.map { .string($0) })])
    }

    static var cancelled: BeaconError {
        client(.cancelled, "Cancelled", "the task was cancelled")
    }

    static var clientClosed: BeaconError {
        client(.clientClosed, "Closed", "the client was closed")
    }

    /// Wraps any error as a `BeaconError`.
    static func wrapping(_ error: any Error) -> BeaconError {
        if let error = error as? BeaconError { return error }
        if let error = error as? VarlinkError { return BeaconError(error) }
        if error is CancellationError { return .cancelled }
        return client(.connectionClosed, "ConnectionClosed", "\(error)", cause: error)
    }
}
