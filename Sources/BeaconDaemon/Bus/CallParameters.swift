import BeaconProtocol

/// Typed access to a call's parameters; a missing or mistyped parameter is `InvalidParameter` with its name.
struct CallParameters {
    let values: [String: JSONValue]

    init(_ call: VarlinkCall) {
        values = call.parameters
    }

    func string(_ name: String) throws(VarlinkError) -> String {
        guard case .string(let value)? = values[name] else { throw .invalidParameter(name) }
        return value
    }

    func optionalString(_ name: String) throws(VarlinkError) -> String? {
        switch values[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw .invalidParameter(name)
        }
    }

    func optionalInt(_ name: String) throws(VarlinkError) -> Int64? {
        switch values[name] {
        case nil, .null?: return nil
        case .int(let value)?: return value
        case .double(let value)? where value.rounded() == value && abs(value) < 9.0e15: return Int64(value)
        default: throw .invalidParameter(name)
        }
    }

    func bool(_ name: String, default fallback: Bool) throws(VarlinkError) -> Bool {
        switch values[name] {
        case nil, .null?: return fallback
        case .bool(let value)?: return value
        default: throw .invalidParameter(name)
        }
    }

    func stringArray(_ name: String) throws(VarlinkError) -> [String] {
        guard case .array(let elements)? = values[name] else { throw .invalidParameter(name) }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let string) = element else { throw .invalidParameter(name) }
            strings.append(string)
        }
        return strings
    }

    /// A required parameter of any JSON type (JSON `null` included).
    func value(_ name: String) throws(VarlinkError) -> JSONValue {
        guard let value = values[name] else { throw .invalidParameter(name) }
        return value
    }

    /// An optional parameter of any JSON type; absent and `null` are both `nil`.
    func optionalValue(_ name: String) -> JSONValue? {
        switch values[name] {
        case nil, .null?: return nil
        case let value?: return value
        }
    }
}

/// The named errors of the Beacon interfaces.
enum BusError {
    static func keyNotFound(_ key: String) -> VarlinkError {
        VarlinkError(name: "io.beacon.Properties.KeyNotFound", parameters: ["key": .string(key)])
    }

    static func versionMismatch(_ key: String, expected: Int64, actual: Int64) -> VarlinkError {
        VarlinkError(
            name: "io.beacon.Properties.VersionMismatch",
            parameters: ["key": .string(key), "expected": .int(expected), "actual": .int(actual)]
        )
    }

    static func readOnly(_ key: String) -> VarlinkError {
        VarlinkError(name: "io.beacon.Properties.ReadOnly", parameters: ["key": .string(key)])
    }

    static func invalidKey(_ key: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: "io.beacon.Properties.InvalidKey",
            parameters: ["key": .string(key), "reason": .string(reason)]
        )
    }

    static func invalidPattern(_ interface: String, _ pattern: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: interface + ".InvalidPattern",
            parameters: ["pattern": .string(pattern), "reason": .string(reason)]
        )
    }

    static func valueTooLarge(_ key: String, size: Int, limit: Int) -> VarlinkError {
        VarlinkError(
            name: "io.beacon.Properties.ValueTooLarge",
            parameters: ["key": .string(key), "size": .int(Int64(size)), "limit": .int(Int64(limit))]
        )
    }

    static func invalidName(_ name: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: "io.beacon.Notifications.InvalidName",
            parameters: ["name": .string(name), "reason": .string(reason)]
        )
    }

    static func limitExceeded(_ limit: String, maximum: Int) -> VarlinkError {
        VarlinkError(
            name: "io.beacon.LimitExceeded",
            parameters: ["limit": .string(limit), "maximum": .int(Int64(maximum))]
        )
    }
}
