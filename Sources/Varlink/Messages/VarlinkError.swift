/// A varlink error: a fully qualified name and its parameters, as carried by an error reply.
public struct VarlinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The qualified error name, e.g. `org.varlink.service.MethodNotFound`.
    public var name: String
    /// The error's parameters.
    public var parameters: [String: JSONValue]

    public init(name: String, parameters: [String: JSONValue] = [:]) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String {
        parameters.isEmpty ? name : "\(name) \(JSONValue.object(parameters).jsonString)"
    }

    /// The name of the error ``protocolError(_:)`` produces: a local name, never sent as it is. A server gives a
    /// client that breaks the protocol its service's own error instead, or closes the connection without a reply, as
    /// varlink's reference server does (`VarlinkService.protocolErrorName` in `VarlinkServer`).
    public static let protocolErrorName = "org.varlink.local.ProtocolViolation"

    /// `org.varlink.service.InterfaceNotFound` with `{"interface": …}`.
    public static func interfaceNotFound(_ interface: String) -> VarlinkError {
        VarlinkError(
            name: VarlinkServiceInterface.Names.interfaceNotFound, parameters: ["interface": .string(interface)])
    }

    /// `org.varlink.service.MethodNotFound` with `{"method": …}`.
    public static func methodNotFound(_ method: String) -> VarlinkError {
        VarlinkError(name: VarlinkServiceInterface.Names.methodNotFound, parameters: ["method": .string(method)])
    }

    /// `org.varlink.service.MethodNotImplemented` with `{"method": …}`.
    public static func methodNotImplemented(_ method: String) -> VarlinkError {
        VarlinkError(name: VarlinkServiceInterface.Names.methodNotImplemented, parameters: ["method": .string(method)])
    }

    /// `org.varlink.service.InvalidParameter` with `{"parameter": …}`.
    public static func invalidParameter(_ parameter: String) -> VarlinkError {
        VarlinkError(
            name: VarlinkServiceInterface.Names.invalidParameter, parameters: ["parameter": .string(parameter)])
    }

    /// `org.varlink.service.PermissionDenied`.
    public static func permissionDenied() -> VarlinkError {
        VarlinkError(name: VarlinkServiceInterface.Names.permissionDenied)
    }

    /// `org.varlink.service.ExpectedMore`: the method must be called with `"more": true`.
    public static func expectedMore() -> VarlinkError {
        VarlinkError(name: VarlinkServiceInterface.Names.expectedMore)
    }

    /// A message that is not a well-formed varlink message, with `{"reason": …}` (named ``protocolErrorName``).
    public static func protocolError(_ reason: String) -> VarlinkError {
        VarlinkError(name: protocolErrorName, parameters: ["reason": .string(reason)])
    }

    /// Whether this is an ``protocolError(_:)``.
    public var isProtocolError: Bool { name == VarlinkError.protocolErrorName }
}
