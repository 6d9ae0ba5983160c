import BeaconProtocol

/// A client calls any varlink interface's generated client: `Certification.Client(beaconClient)`.
extension BeaconClient: VarlinkCaller {
    public func remoteError(in error: any Error) -> VarlinkError? {
        guard let error = error as? BeaconError, error.isRemote else { return error as? VarlinkError }
        return VarlinkError(name: error.name, parameters: error.parameters)
    }
}

extension BeaconClient {
    /// This client as the caller of BeaconClient's own generated calls: an error reply reaches the call as the
    /// ``BeaconError`` it is, with every parameter the daemon sent (the generated client's typed error would keep
    /// only those its interface declares, and a provider's answer may carry others).
    struct ErrorsAsSent: VarlinkCaller {
        let client: BeaconClient

        func call(method: String, parameters: [String: JSONValue]) async throws -> [String: JSONValue] {
            try await client.call(method: method, parameters: parameters)
        }

        func stream(method: String, parameters: [String: JSONValue]) -> AsyncThrowingStream<
            [String: JSONValue], any Error
        > {
            client.stream(method: method, parameters: parameters)
        }

        func send(method: String, parameters: [String: JSONValue]) async throws {
            try await client.send(method: method, parameters: parameters)
        }

        func remoteError(in error: any Error) -> VarlinkError? { nil }
    }

    /// The caller of BeaconClient's own generated calls (``ErrorsAsSent``).
    var calls: ErrorsAsSent { ErrorsAsSent(client: self) }

    /// Runs a call of a generated client on ``calls`` (`IOBeaconSettings.Client(calls)`, ...), with its errors as
    /// ``BeaconError``s: the daemon's as it sent them, a reply that does not decode as its method declares as
    /// ``BeaconError/Code/invalidReply``.
    func typed<Reply>(_ call: () async throws -> Reply) async throws(BeaconError) -> Reply {
        do {
            return try await call()
        } catch let error as BeaconError {
            throw error
        } catch {
            throw .invalidReply("the reply is not what its method declares: \(error)", cause: error)
        }
    }
}
