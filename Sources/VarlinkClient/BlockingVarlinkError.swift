import Varlink

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An error of a ``BlockingVarlinkConnection``: a failure on the client's side, or an error reply of the peer.
///
/// Switch on ``code``; for ``Code/remote`` the peer's error is in ``remoteError``.
///
/// ```swift
/// do {
///     let reply = try connection.call(VarlinkCall(method: "org.example.ping.Ping", parameters: ["text": "a"]))
/// } catch where error.code == .remote {
///     print(error.remoteError?.name ?? "")
/// }
/// ```
public struct BlockingVarlinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of error this is. New codes may be added; switch with a `default` case.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: Hashable, Sendable {
            case invalidAddress, cannotConnect, timedOut, connectionClosed, systemCallFailed, invalidReply, remote
        }

        fileprivate let base: Base

        /// The address is not `unix:PATH`, or the path does not fit in a socket address.
        public static let invalidAddress = Code(base: .invalidAddress)
        /// Nothing accepts connections at the address (no socket file, nobody listening, no permission).
        public static let cannotConnect = Code(base: .cannotConnect)
        /// The deadline passed before the connection, the write or the reply completed.
        public static let timedOut = Code(base: .timedOut)
        /// The peer closed the connection.
        public static let connectionClosed = Code(base: .connectionClosed)
        /// A socket call failed; ``BlockingVarlinkError/systemError`` holds `errno`.
        public static let systemCallFailed = Code(base: .systemCallFailed)
        /// The peer sent something that is not a varlink reply (or a reply larger than the limits).
        public static let invalidReply = Code(base: .invalidReply)
        /// The peer answered with a varlink error, in ``BlockingVarlinkError/remoteError``.
        public static let remote = Code(base: .remote)

        public var description: String { "\(base)" }
    }

    /// What kind of error this is.
    public var code: Code
    /// A one-line human-readable explanation.
    public var message: String
    /// The `errno` value of the failed system call, if one failed.
    public var systemError: Int32?
    /// The peer's error reply, for ``Code/remote``.
    public var remoteError: VarlinkError?

    public init(code: Code, message: String, systemError: Int32? = nil, remoteError: VarlinkError? = nil) {
        self.code = code
        self.message = message
        self.systemError = systemError
        self.remoteError = remoteError
    }

    /// The error for a varlink error reply.
    public init(remote error: VarlinkError) {
        self.init(code: .remote, message: error.description, remoteError: error)
    }

    public var description: String {
        if let systemError { return "\(message) (\(BlockingVarlinkError.systemErrorText(systemError)))" }
        return message
    }

    /// The C library's text for an `errno` value.
    public static func systemErrorText(_ number: Int32) -> String {
        guard let text = strerror(number) else { return "errno \(number)" }
        return String(cString: text)
    }
}
