/// A varlink reply: `{"parameters": {…}, "continues": true}` or, for an error, `{"error": "…", "parameters": {…}}`.
public struct VarlinkReply: Sendable, Hashable {
    /// The output parameters, or the error's parameters.
    public var parameters: [String: JSONValue]
    /// More replies to the same call follow.
    public var continues: Bool
    /// The qualified error name for an error reply; `nil` otherwise.
    public var error: String?

    public init(parameters: [String: JSONValue] = [:], continues: Bool = false) {
        self.parameters = parameters
        self.continues = continues
        self.error = nil
    }

    /// An error reply.
    public init(error: VarlinkError) {
        self.parameters = error.parameters
        self.continues = false
        self.error = error.name
    }

    /// The error this reply carries, if it is an error reply.
    public var varlinkError: VarlinkError? {
        error.map { VarlinkError(name: $0, parameters: parameters) }
    }
}

extension VarlinkReply {
    /// Parses a reply from one frame, without its terminating NUL byte. Unknown members are ignored.
    public init(parsing frame: UnsafeRawBufferPointer, limits: JSONLimits) throws(VarlinkError) {
        var parameters: [String: JSONValue] = [:]
        var continues = false
        var error: String?
        var fieldError: String?
        do {
            var parser = try JSONParser(frame, limits: limits)
            try parser.beginObject(depth: 0)
            var first = true
            while let name = try parser.nextMemberName(first: &first) {
                let value = try parser.parseValue(depth: 1)
                if name.is("parameters") {
                    switch value {
                    case .object(let members): parameters = members
                    case .null: break
                    default: fieldError = fieldError ?? "\"parameters\" must be an object"
                    }
                } else if name.is("continues") {
                    switch value {
                    case .bool(let flag): continues = flag
                    case .null: break
                    default: fieldError = fieldError ?? "\"continues\" must be a boolean"
                    }
                } else if name.is("error") {
                    switch value {
                    case .string(let name): error = name
                    case .null: break
                    default: fieldError = fieldError ?? "\"error\" must be a string"
                    }
                }
            }
            try parser.expectEnd()
        } catch {
            throw VarlinkError.protocolError("malformed message: \(error)")
        }
        if let fieldError { throw VarlinkError.protocolError(fieldError) }
        self.parameters = parameters
        self.continues = continues
        self.error = error
    }

    /// Parses a reply from one frame held in an array, without its terminating NUL byte.
    public init(parsing frame: [UInt8], limits: JSONLimits = .default) throws(VarlinkError) {
        let result: Result<VarlinkReply, VarlinkError> = frame.withUnsafeBytes { raw in
            Result { () throws(VarlinkError) in try VarlinkReply(parsing: raw, limits: limits) }
        }
        self = try result.get()
    }

    /// Appends the reply's JSON and the terminating NUL byte to `buffer`.
    public func encode(into buffer: inout [UInt8]) {
        if let error {
            JSONWriter.appendASCII("{\"error\":", to: &buffer)
            JSONWriter.appendString(error, to: &buffer)
            JSONWriter.appendASCII(",\"parameters\":", to: &buffer)
        } else {
            JSONWriter.appendASCII("{\"parameters\":", to: &buffer)
        }
        JSONWriter.appendObject(parameters, to: &buffer)
        if continues { JSONWriter.appendASCII(",\"continues\":true", to: &buffer) }
        buffer.append(UInt8(ascii: "}"))
        buffer.append(0)
    }
}

extension VarlinkReply: CustomStringConvertible {
    /// The reply as JSON text, without the NUL.
    public var description: String {
        var bytes: [UInt8] = []
        encode(into: &bytes)
        bytes.removeLast()
        return String(decoding: bytes, as: UTF8.self)
    }
}
