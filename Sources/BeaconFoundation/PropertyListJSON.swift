import BeaconProtocol
import Foundation

/// Property-list values (`String`, integers, floating-point numbers, `Bool`, `Date`, `Data`, arrays and
/// dictionaries with `String` keys) as JSON and back, without loss:
///
/// - strings, booleans, integers and floating-point numbers are JSON's own (an integer stays an integer);
/// - a `Date` is `{"$date": SECONDS}` (since 1970, a floating-point number), a `Data` `{"$data": "BASE64"}`;
/// - a dictionary with a key that starts with `$` is wrapped as `{"$dictionary": {...}}`, so that no dictionary is
///   taken for a date or data.
///
/// A value of any other type is not a property-list value: ``json(_:)`` returns `nil` for it.
public enum PropertyListJSON {
    public static func json(_ value: Any) -> JSONValue? {
        switch value {
        case let flag as Bool: return .bool(flag)
        case let text as String: return .string(text)
        case let date as Date: return .object(["$date": .double(date.timeIntervalSince1970)])
        case let data as Data: return .object(["$data": .string(data.base64EncodedString())])
        case let number as Int: return .int(Int64(number))
        case let number as Int64: return .int(number)
        case let number as Int32: return .int(Int64(number))
        case let number as Int16: return .int(Int64(number))
        case let number as Int8: return .int(Int64(number))
        case let number as UInt: return Int64(exactly: number).map(JSONValue.int) ?? .double(Double(number))
        case let number as UInt64: return Int64(exactly: number).map(JSONValue.int) ?? .double(Double(number))
        case let number as UInt32: return .int(Int64(number))
        case let number as UInt16: return .int(Int64(number))
        case let number as UInt8: return .int(Int64(number))
        case let number as Double: return .double(number)
        case let number as Float: return .double(Double(number))
        case let number as NSNumber: return json(number)
        case let array as [Any]:
            var elements: [JSONValue] = []
            for element in array {
                guard let converted = json(element) else { return nil }
                elements.append(converted)
            }
            return .array(elements)
        case let dictionary as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (key, element) in dictionary {
                guard let converted = json(element) else { return nil }
                members[key] = converted
            }
            return members.keys.contains(where: { $0.hasPrefix("$") })
                ? .object(["$dictionary": .object(members)]) : .object(members)
        case let dictionary as [AnyHashable: Any]:
            var strings: [String: Any] = [:]
            for (key, element) in dictionary {
                guard let key = key.base as? String else { return nil }
                strings[key] = element
            }
            return json(strings)
        default:
            return nil
        }
    }

    /// An `NSNumber` as what it holds: a boolean (made from a `Bool`, type code `c` or `B`), an integer or a
    /// floating-point number.
    private static func json(_ number: NSNumber) -> JSONValue {
        switch String(cString: number.objCType) {
        case "c", "B": return .bool(number.boolValue)
        case "f", "d": return .double(number.doubleValue)
        case "Q", "L", "I", "S", "C":
            return Int64(exactly: number.uint64Value).map(JSONValue.int) ?? .double(number.doubleValue)
        default: return .int(number.int64Value)
        }
    }

    /// The property-list value of `json`: `Int`, `Double`, `Bool`, `String`, `Date`, `Data`, `[Any]` and
    /// `[String: Any]`; `null` has none (`nil`, and left out of arrays and dictionaries).
    public static func value(_ json: JSONValue) -> Any? {
        switch json {
        case .null: return nil
        case .bool(let flag): return flag
        case .int(let number): return Int(exactly: number) ?? Double(number)
        case .double(let number): return number
        case .string(let text): return text
        case .array(let elements): return elements.compactMap(value)
        case .object(let members):
            if members.count == 1, let (key, content) = members.first {
                switch (key, content) {
                case ("$date", .double(let seconds)): return Date(timeIntervalSince1970: seconds)
                case ("$date", .int(let seconds)): return Date(timeIntervalSince1970: Double(seconds))
                case ("$data", .string(let text)): if let data = Data(base64Encoded: text) { return data }
                case ("$dictionary", .object(let wrapped)): return wrapped.compactMapValues(value)
                default: break
                }
            }
            return members.compactMapValues(value)
        }
    }
}
