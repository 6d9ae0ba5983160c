import BeaconProtocol

/// A client calls any varlink interface's generated client: `Certification.Client(beaconClient)`.
extension BeaconClient: VarlinkCaller {
    public func remoteError(in error: any Error) -> VarlinkError? {
        guard let error = error as? BeaconError, error.isRemote else { return error as? VarlinkError }
        return VarlinkError(name: error.name, parameters: error.parameters)
    }
}
