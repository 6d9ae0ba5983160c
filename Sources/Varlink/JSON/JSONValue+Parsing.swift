extension JSONValue {
    /// Parses one JSON value from `bytes`, which must hold exactly one value and optional whitespace.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default) throws(JSONError) {
        var parser = try JSONParser(bytes, limits: limits)
        self = try parser.parseDocument()
    }

    /// Parses one JSON value from `bytes`.
    public init(parsing bytes: [UInt8], limits: JSONLimits = .default) throws(JSONError) {
        let result: Result<JSONValue, JSONError> = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONError) in try JSONValue(parsing: raw, limits: limits) }
        }
        self = try result.get()
    }

    /// Parses one JSON value from the UTF-8 of `string`.
    public init(parsing string: String, limits: JSONLimits = .default) throws(JSONError) {
        var text = string
        let result: Result<JSONValue, JSONError> = text.withUTF8 { utf8 in
            Result { () throws(JSONError) in try JSONValue(parsing: UnsafeRawBufferPointer(utf8), limits: limits) }
        }
        self = try result.get()
    }
}
