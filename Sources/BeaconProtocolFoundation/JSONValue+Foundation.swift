import BeaconProtocol

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension JSONValue {
    /// Converts any `Encodable` value to a ``JSONValue`` (through `JSONEncoder`).
    public init<T: Encodable>(encoding value: T) throws {
        let data = try JSONEncoder().encode(value)
        self = try JSONValue(parsing: [UInt8](data), limits: JSONLimits(maxDepth: 512, maxBytes: .max))
    }

    /// Decodes a `Decodable` value from this JSON value (through `JSONDecoder`).
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        var bytes: [UInt8] = []
        encode(into: &bytes)
        return try JSONDecoder().decode(type, from: Data(bytes))
    }
}
