/// A varlink method call: `{"method": "…", "parameters": {…}, "more": true, "oneway": true, "upgrade": true}`.
public struct VarlinkCall: Sendable, Hashable {
    /// The fully qualified method name, e.g. `io.beacon.Properties.Get`.
    public var method: String
    /// The call's input parameters (an absent `parameters` member is an empty object).
    public var parameters: [String: JSONValue]
    /// The caller accepts several replies, each but the last with `"continues": true`.
    public var more: Bool
    /// The caller wants no reply.
    public var oneway: Bool
    /// The caller asks to switch the connection to another protocol after the reply.
    public var upgrade: Bool

    public init(
        method: String,
        parameters: [String: JSONValue] = [:],
        more: Bool = false,
        oneway: Bool = false,
        upgrade: Bool = false
    ) {
        self.method = method
        self.parameters = parameters
        self.more = more
        self.oneway = oneway
        self.upgrade = upgrade
    }

    /// The interface part of ``method``, e.g. `io.beacon.Properties`.
    public var interface: Substring {
        guard let dot = method.lastIndex(of: ".") else { return method[method.startIndex..<method.startIndex] }
        return method[..<dot]
    }

    /// The member part of ``method``, e.g. `Get`.
    public var member: Substring {
        guard let dot = method.lastIndex(of: ".") else { return method[...] }
        return method[method.index(after: dot)...]
    }
}

extension VarlinkCall {
    /// Parses a call from one frame, without its terminating NUL byte.
    ///
    /// Throws ``VarlinkError/protocolError(_:)`` with a reason when the frame is not JSON, not an object, lacks a
    /// string `method` with a valid `interface.Member` name, or has members of the wrong type. Unknown members
    /// are ignored.
    public init(parsing frame: UnsafeRawBufferPointer, limits: JSONLimits) throws(VarlinkError) {
        let fields: CallFields
        do {
            fields = try CallFields(parsing: frame, limits: limits)
        } catch {
            throw VarlinkError.protocolError("malformed message: \(error)")
        }
        if let fieldError = fields.fieldError { throw VarlinkError.protocolError(fieldError) }
        guard let method = fields.method else { throw VarlinkError.protocolError("the message has no \"method\"") }
        guard VarlinkNames.isValidQualifiedMemberName(method) else {
            throw VarlinkError.protocolError("invalid method name \"\(method.prefix(256))\"")
        }
        self.init(
            method: method, parameters: fields.parameters, more: fields.more, oneway: fields.oneway,
            upgrade: fields.upgrade)
    }

    /// Parses a call from one frame held in an array, without its terminating NUL byte.
    public init(parsing frame: [UInt8], limits: JSONLimits = .default) throws(VarlinkError) {
        let result: Result<VarlinkCall, VarlinkError> = frame.withUnsafeBytes { raw in
            Result { () throws(VarlinkError) in try VarlinkCall(parsing: raw, limits: limits) }
        }
        self = try result.get()
    }

    /// Appends the call's JSON and the terminating NUL byte to `buffer`.
    public func encode(into buffer: inout [UInt8]) {
        JSONWriter.appendASCII("{\"method\":", to: &buffer)
        JSONWriter.appendString(method, to: &buffer)
        JSONWriter.appendASCII(",\"parameters\":", to: &buffer)
        JSONWriter.appendObject(parameters, to: &buffer)
        if more { JSONWriter.appendASCII(",\"more\":true", to: &buffer) }
        if oneway { JSONWriter.appendASCII(",\"oneway\":true", to: &buffer) }
        if upgrade { JSONWriter.appendASCII(",\"upgrade\":true", to: &buffer) }
        buffer.append(UInt8(ascii: "}"))
        buffer.append(0)
    }
}

/// The members of a call message, before the method name is checked.
private struct CallFields {
    var method: String?
    var parameters: [String: JSONValue] = [:]
    var more = false
    var oneway = false
    var upgrade = false
    /// The first member with the wrong type.
    var fieldError: String?

    init(parsing frame: UnsafeRawBufferPointer, limits: JSONLimits) throws(JSONError) {
        var parser = try JSONParser(frame, limits: limits)
        try parser.beginObject(depth: 0)
        var first = true
        while let name = try parser.nextMemberName(first: &first) {
            let value = try parser.parseValue(depth: 1)
            if name.is("method") {
                if case .string(let string) = value {
                    method = string
                } else {
                    fieldError = fieldError ?? "\"method\" must be a string"
                }
            } else if name.is("parameters") {
                if case .object(let members) = value {
                    parameters = members
                } else if !value.isNull {
                    fieldError = fieldError ?? "\"parameters\" must be an object"
                }
            } else if name.is("more") {
                more = flag(value, "more")
            } else if name.is("oneway") {
                oneway = flag(value, "oneway")
            } else if name.is("upgrade") {
                upgrade = flag(value, "upgrade")
            }
        }
        try parser.expectEnd()
    }

    private mutating func flag(_ value: JSONValue, _ name: String) -> Bool {
        switch value {
        case .bool(let flag): return flag
        case .null: return false
        default:
            fieldError = fieldError ?? "\"\(name)\" must be a boolean"
            return false
        }
    }
}

extension VarlinkCall: CustomStringConvertible {
    /// The call as JSON text, without the NUL.
    public var description: String {
        var bytes: [UInt8] = []
        encode(into: &bytes)
        bytes.removeLast()
        return String(decoding: bytes, as: UTF8.self)
    }
}
