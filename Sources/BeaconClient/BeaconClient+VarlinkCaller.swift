import BeaconProtocol

/// A client calls any varlink interface's generated client: `Certification.Client(beaconClient)`.
extension BeaconClient: VarlinkCaller {
    public func remoteError(in error: any Error) -> VarlinkError? {
        guard let error = error as? BeaconError, error.isRemote else { return error as? VarlinkError }
        return VarlinkError(name: error.name, parameters: error.parameters)
    }
}

extension BeaconClient {
    /// Runs a call of a generated client (`IOBeaconSettings.Client(self)`, ...) through this client, with its
    /// errors as ``BeaconError``s: the daemon's as it sent them (an interface's own error, which the generated
    /// client made typed, becomes the error reply again), a reply that does not decode as its method declares as
    /// ``BeaconError/Code/invalidReply``.
    func typed<Reply>(_ call: () async throws -> Reply) async throws(BeaconError) -> Reply {
        do {
            return try await call()
        } catch let error as BeaconError {
            throw error
        } catch let error as any VarlinkInterfaceError {
            throw BeaconError(error.varlinkError)
        } catch {
            throw .invalidReply("the reply is not what its method declares: \(error)", cause: error)
        }
    }
}
