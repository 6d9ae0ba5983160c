/// A connection that a generated client calls through: a varlink client of any transport.
///
/// Errors: a varlink error reply must be thrown as an error that ``remoteError(in:)`` recognizes (by default a
/// ``VarlinkError`` itself), so that the generated client can turn it into its interface's error.
public protocol VarlinkCaller: Sendable {
    /// Calls `method` and returns the reply's parameters.
    func call(method: String, parameters: [String: JSONValue]) async throws -> [String: JSONValue]

    /// Calls `method` with `"more": true` and yields each reply's parameters until the reply without `continues`.
    func stream(method: String, parameters: [String: JSONValue]) -> AsyncThrowingStream<
        [String: JSONValue], any Error
    >

    /// Calls `method` with `"oneway": true`: no reply comes.
    func send(method: String, parameters: [String: JSONValue]) async throws

    /// The varlink error reply that `error`, thrown by this caller, carries.
    func remoteError(in error: any Error) -> VarlinkError?
}

extension VarlinkCaller {
    public func remoteError(in error: any Error) -> VarlinkError? { error as? VarlinkError }

    /// `error` as the interface's error `E` when it is an error reply that `E` declares, else `error` itself.
    public func translate<E: VarlinkInterfaceError>(_ error: any Error, to type: E.Type) -> any Error {
        guard let remote = remoteError(in: error), let declared = E(remote) else { return error }
        return declared
    }
}

/// Where the replies to one call go: the server's side of a connection, for generated dispatch.
public protocol VarlinkResponder: AnyObject {
    /// Sends a reply; with `continues` more replies follow.
    func reply(_ parameters: [String: JSONValue], continues: Bool)

    /// Sends an error reply, which ends the call.
    func reply(error: VarlinkError)
}

/// One call of a method, as a generated service receives it: its decoded parameters, its flags, and the way to
/// answer. `Reply` and `Failure` are the method's reply and its interface's errors.
public struct VarlinkMethodCall<Parameters: VarlinkStruct, Reply: VarlinkStruct, Failure: VarlinkInterfaceError> {
    /// The call's parameters.
    public let parameters: Parameters
    /// The client asked for more than one reply (`"more": true`).
    public let more: Bool
    /// The client wants no reply (`"oneway": true`); replies sent anyway are dropped.
    public let oneway: Bool
    /// The connection's side that replies go to; a server's own type, which a service may ask for.
    public let responder: any VarlinkResponder

    public init(parameters: Parameters, more: Bool, oneway: Bool, responder: any VarlinkResponder) {
        self.parameters = parameters
        self.more = more
        self.oneway = oneway
        self.responder = responder
    }

    /// Answers the call; with `continues` (only when ``more``), more replies follow.
    public func reply(_ reply: Reply, continues: Bool = false) {
        guard !oneway else { return }
        responder.reply(reply.varlinkMembers, continues: continues && more)
    }

    /// Answers with one of the interface's errors.
    public func fail(_ error: Failure) {
        guard !oneway else { return }
        responder.reply(error: error.varlinkError)
    }

    /// Answers with any varlink error (`org.varlink.service.InvalidParameter`, …).
    public func fail(_ error: VarlinkError) {
        guard !oneway else { return }
        responder.reply(error: error)
    }
}

/// How a method is called, as a `@mode` line of its documentation in a `.varlink` file says.
public enum VarlinkMethodMode: String, Sendable, Hashable, CaseIterable {
    /// One call, one reply (the default).
    case call
    /// Called with `"more": true`; replies with `continues` until the last.
    case stream
    /// Called with `"oneway": true`; no reply.
    case oneway
    /// Called with `"upgrade": true`; after the reply the connection carries another protocol.
    case upgrade
}

/// A `.varlink` file's interface as generated code sees it: its name and the text served by
/// `org.varlink.service.GetInterfaceDescription`.
public protocol VarlinkGeneratedInterface {
    /// The interface's name, `org.example.ping`.
    static var name: String { get }
    /// The `.varlink` file's text, verbatim.
    static var description: String { get }
}
