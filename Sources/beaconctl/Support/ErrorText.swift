import BeaconBlockingClient
import BeaconProtocol

/// One-line explanations of the errors the daemon and the connection report.
enum ErrorText {
    /// `NAME: explanation` for a varlink error reply.
    static func describe(_ error: VarlinkError) -> String {
        error.name + ": " + explain(error)
    }

    /// The explanation of a varlink error, from its name and parameters.
    static func explain(_ error: VarlinkError) -> String {
        let parameters = error.parameters
        func text(_ name: String) -> String {
            guard let value = parameters[name] else { return "?" }
            return value.stringValue ?? JSONText.compact(value)
        }
        switch error.name {
        case IOBeaconProperties.KeyNotFound.name:
            return "no property is stored under \(text("key"))"
        case IOBeaconProperties.VersionMismatch.name:
            let actual = parameters["actual"]?.intValue
            let now = actual == 0 ? "does not exist" : "is at version \(text("actual"))"
            let expected = parameters["expected"]?.intValue == 0 ? "not to exist" : "version \(text("expected"))"
            return "\(text("key")) \(now), expected \(expected)"
        case IOBeaconProperties.ReadOnly.name:
            return
                "\(text("key")) is read-only (lifecycle, session, system, desktop and daemon keys are set by the daemon)"
        case IOBeaconProperties.InvalidKey.name:
            return "\"\(text("key"))\" is not a valid key: \(text("reason"))"
        case IOBeaconProperties.InvalidPattern.name, IOBeaconNotifications.InvalidPattern.name:
            return "\"\(text("pattern"))\" is not a valid pattern: \(text("reason"))"
        case IOBeaconProperties.ValueTooLarge.name:
            return "the value for \(text("key")) is \(text("size")) bytes, the limit is \(text("limit"))"
        case IOBeaconProperties.TypeMismatch.name:
            return "the value for \(text("key")) does not fit its schema (\(text("expected"))): \(text("reason"))"
        case IOBeaconProviders.ProviderUnavailable.name:
            return "\(text("key")) cannot be written now: \(text("reason"))"
        case IOBeaconProviders.OutcomeUnknown.name:
            return "\(text("key")) may or may not have been written (read it to know): \(text("reason"))"
        case IOBeaconProperties.Locked.name:
            return "\(text("key")) is locked by \(text("file")):\(text("line"))"
        case IOBeaconSettings.InvalidSchema.name:
            let problems = (parameters["problems"]?.arrayValue ?? []).map { $0.stringValue ?? JSONText.compact($0) }
            return "the schema has problems: " + (problems.isEmpty ? "?" : problems.joined(separator: "; "))
        case IOBeaconNotifications.InvalidName.name:
            return "\"\(text("name"))\" cannot be posted: \(text("reason"))"
        case IOBeacon.LimitExceeded.name:
            return "the daemon's limit \(text("limit")) (\(text("maximum"))) is reached"
        case IOBeacon.ProtocolError.name:
            return "the daemon rejected the message: \(text("reason"))"
        case VarlinkServiceInterface.Names.interfaceNotFound:
            return "the daemon has no interface \(text("interface"))"
        case VarlinkServiceInterface.Names.methodNotFound:
            return "the daemon has no method \(text("method"))"
        case VarlinkServiceInterface.Names.methodNotImplemented:
            return "\(text("method")) is not implemented"
        case VarlinkServiceInterface.Names.invalidParameter:
            return "the parameter \(text("parameter")) is missing or has the wrong type"
        case VarlinkServiceInterface.Names.permissionDenied:
            return "permission denied"
        case VarlinkServiceInterface.Names.expectedMore:
            return "the method streams its replies: call it with --more"
        default:
            return parameters.isEmpty ? "(no parameters)" : JSONText.compact(parameters)
        }
    }

    /// The message and exit status for a failure of the connection or an error reply.
    static func failure(_ error: BlockingVarlinkError, address: String) -> CommandFailure {
        switch error.code {
        case .remote:
            // A remote error always carries the peer's error; its description stands in should it not.
            return CommandFailure(.daemonError, error.remoteError.map(describe) ?? error.description)
        case .cannotConnect, .invalidAddress:
            return CommandFailure(.cannotConnect, "cannot connect to \(address): \(error.description)")
        case .timedOut:
            return CommandFailure(.timedOut, "\(error.message) from \(address)")
        case .connectionClosed, .invalidReply:
            return CommandFailure(.connectionLost, "\(address): \(error.description)")
        default:
            return CommandFailure(.connectionLost, "\(address): \(error.description)")
        }
    }
}
