import BeaconProtocol

/// Typed access to a call's parameters; a missing or mistyped parameter is `InvalidParameter` with its name.
///
/// Reads a parsed ``VarlinkCall`` or, with the same results, a ``VarlinkCallView`` in place.
struct CallParameters {
    private let values: [String: JSONValue]
    /// The call read in place, or ``VarlinkCallView/none`` when the parameters were parsed into ``values``. Not an
    /// optional: reading a view out of one copies its bytes on every access.
    private let view: VarlinkCallView
    private let inPlace: Bool

    init(_ call: VarlinkCall) {
        values = call.parameters
        view = .none
        inPlace = false
    }

    /// The parameters of a call read in place; valid as long as the view is.
    init(_ call: VarlinkCallView) {
        values = [:]
        view = call
        inPlace = true
    }

    /// The parameter as a parsed value.
    private func parsed(_ name: StaticString) -> JSONValue? {
        if inPlace { return view.parameter(name)?.jsonValue }
        return values[name.description]
    }

    /// How many parameters the call has.
    var count: Int { inPlace ? view.parameterCount : values.count }

    /// A parameter of any type, or `nil` when it is absent or `null`.
    func optionalValue(_ name: StaticString) -> JSONValue? {
        let value = parsed(name)
        return value == .null ? nil : value
    }

    /// An array parameter's elements.
    func array(_ name: StaticString) throws(VarlinkError) -> [JSONValue] {
        guard case .array(let elements)? = parsed(name) else { throw .invalidParameter(name.description) }
        return elements
    }

    /// An object parameter's members.
    func object(_ name: StaticString) throws(VarlinkError) -> [String: JSONValue] {
        guard case .object(let members)? = parsed(name) else { throw .invalidParameter(name.description) }
        return members
    }

    func string(_ name: StaticString) throws(VarlinkError) -> String {
        if inPlace {
            guard let value = view.parameter(name)?.stringValue else { throw .invalidParameter(name.description) }
            return value
        }
        guard case .string(let value)? = values[name.description] else { throw .invalidParameter(name.description) }
        return value
    }

    /// A required string parameter, and whether it is all ASCII: read in place, the bytes tell, without a second
    /// pass through the `String`.
    func stringNotingASCII(_ name: StaticString) throws(VarlinkError) -> (String, isASCII: Bool) {
        if inPlace, let utf8 = view.parameter(name)?.unescapedUTF8 {
            return (String(decoding: utf8, as: UTF8.self), BusNames.isASCII(utf8))
        }
        let string = try string(name)
        return (string, BusNames.isASCII(string))
    }

    func optionalString(_ name: StaticString) throws(VarlinkError) -> String? {
        if inPlace {
            guard let value = view.parameter(name), value.kind != .null else { return nil }
            guard let string = value.stringValue else { throw .invalidParameter(name.description) }
            return string
        }
        switch values[name.description] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw .invalidParameter(name.description)
        }
    }

    func optionalInt(_ name: StaticString) throws(VarlinkError) -> Int64? {
        let value: JSONValue?
        if inPlace {
            guard let parameter = view.parameter(name), parameter.kind != .null else { return nil }
            if let integer = parameter.intValue { return integer }
            value = parameter.jsonValue
        } else {
            value = values[name.description]
        }
        switch value {
        case nil, .null?: return nil
        case .int(let value)?: return value
        case .double(let value)? where value.rounded() == value && abs(value) < 9.0e15: return Int64(value)
        default: throw .invalidParameter(name.description)
        }
    }

    func bool(_ name: StaticString, default fallback: Bool) throws(VarlinkError) -> Bool {
        if inPlace {
            guard let value = view.parameter(name), value.kind != .null else { return fallback }
            guard let flag = value.boolValue else { throw .invalidParameter(name.description) }
            return flag
        }
        switch values[name.description] {
        case nil, .null?: return fallback
        case .bool(let value)?: return value
        default: throw .invalidParameter(name.description)
        }
    }

    func stringArray(_ name: StaticString) throws(VarlinkError) -> [String] {
        guard case .array(let elements)? = parsed(name) else { throw .invalidParameter(name.description) }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let string) = element else { throw .invalidParameter(name.description) }
            strings.append(string)
        }
        return strings
    }

    /// A required parameter of any JSON type (JSON `null` included), as compact JSON text.
    func encodedValue(_ name: StaticString) throws(VarlinkError) -> [UInt8] {
        if inPlace {
            guard let value = view.parameter(name) else { throw .invalidParameter(name.description) }
            return value.compactBytes
        }
        guard let value = values[name.description] else { throw .invalidParameter(name.description) }
        var bytes: [UInt8] = []
        value.encode(into: &bytes)
        return bytes
    }

    /// Appends `prefix` and the compact JSON text of an optional parameter of any JSON type to `buffer`, unless it
    /// is absent or `null`; returns the size of the text, or `nil` when nothing was appended.
    func appendOptionalEncodedValue(
        _ name: StaticString, after prefix: StaticString, to buffer: inout [UInt8]
    ) -> Int? {
        if inPlace {
            guard let value = view.parameter(name), value.kind != .null else { return nil }
            JSONWriter.appendASCII(prefix, to: &buffer)
            let start = buffer.count
            value.appendCompact(to: &buffer)
            return buffer.count - start
        }
        switch values[name.description] {
        case nil, .null?:
            return nil
        case let value?:
            JSONWriter.appendASCII(prefix, to: &buffer)
            let start = buffer.count
            value.encode(into: &buffer)
            return buffer.count - start
        }
    }
}

/// The named errors of the Beacon interfaces.
enum BusError {
    /// The tick's changes could not be made durable; the call had no effect.
    static func storeFailed(_ reason: String) -> VarlinkError {
        VarlinkError(name: IOBeacon.StoreFailed.name, parameters: ["reason": .string(reason)])
    }

    static func keyNotFound(_ key: String) -> VarlinkError {
        VarlinkError(name: IOBeaconProperties.KeyNotFound.name, parameters: ["key": .string(key)])
    }

    static func versionMismatch(_ key: String, expected: Int64, actual: Int64) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProperties.VersionMismatch.name,
            parameters: ["key": .string(key), "expected": .int(expected), "actual": .int(actual)]
        )
    }

    static func readOnly(_ key: String) -> VarlinkError {
        VarlinkError(name: IOBeaconProperties.ReadOnly.name, parameters: ["key": .string(key)])
    }

    static func invalidKey(_ key: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProperties.InvalidKey.name,
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
            name: IOBeaconProperties.ValueTooLarge.name,
            parameters: ["key": .string(key), "size": .int(Int64(size)), "limit": .int(Int64(limit))]
        )
    }

    static func invalidName(_ name: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconNotifications.InvalidName.name,
            parameters: ["name": .string(name), "reason": .string(reason)]
        )
    }

    static func typeMismatch(_ key: String, expected: String, reason: String) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProperties.TypeMismatch.name,
            parameters: ["key": .string(key), "expected": .string(expected), "reason": .string(reason)]
        )
    }

    static func locked(_ key: String, file: String, line: Int) -> VarlinkError {
        VarlinkError(
            name: IOBeaconProperties.Locked.name,
            parameters: ["key": .string(key), "file": .string(file), "line": .int(Int64(line))]
        )
    }

    static func invalidSchema(_ problems: [String]) -> VarlinkError {
        VarlinkError(
            name: IOBeaconSettings.InvalidSchema.name, parameters: ["problems": .array(problems.map { .string($0) })])
    }

    static func notSuspended() -> VarlinkError {
        VarlinkError(name: IOBeacon.NotSuspended.name, parameters: [:])
    }

    static func limitExceeded(_ limit: String, maximum: Int) -> VarlinkError {
        VarlinkError(
            name: IOBeacon.LimitExceeded.name,
            parameters: ["limit": .string(limit), "maximum": .int(Int64(maximum))]
        )
    }
}
