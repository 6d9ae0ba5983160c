/// A varlink call read in place from the bytes of its frame, for servers that answer the calls they see most
/// without building a ``VarlinkCall``.
///
/// The view points into the frame it was made from: use it only while those bytes stay valid and unchanged. It
/// is made only for well-formed calls whose parts it can describe exactly (see ``init(parsing:limits:)``); for
/// every other frame, ``VarlinkCall/init(parsing:limits:)`` decides, and names the error.
@usableFromInline
package struct VarlinkCallView {
    private let base: UnsafePointer<UInt8>
    // Offsets in 32 bits (frames are shorter): with the parameters, the view fits in 128 bytes.
    private var methodStart32: Int32 = 0
    private var methodEnd32: Int32 = 0
    private var parameters = ParameterMembers()
    /// The caller accepts several replies.
    package private(set) var more = false
    /// The caller wants no reply.
    @usableFromInline package private(set) var oneway = false
    /// The caller asks to switch the connection to another protocol after the reply.
    package private(set) var upgrade = false

    private var methodStart: Int { Int(methodStart32) }
    private var methodEnd: Int { Int(methodEnd32) }

    /// Reads a call from one frame, without its terminating NUL byte.
    ///
    /// Returns `nil` when ``VarlinkCall/init(parsing:limits:)`` would throw for another reason than the method
    /// name (see ``hasValidMethodName``), and also for calls this view does not describe: member names written with
    /// escapes or outside ASCII or longer than 65,535 bytes, a method name with escapes, more than six parameters, or
    /// limits deeper than the parser's recursion limit. When the method name is valid, a view holds what
    /// ``VarlinkCall/init(parsing:limits:)`` would: the same method, flags and parameters.
    @usableFromInline
    package init?(parsing frame: UnsafeRawBufferPointer, limits: JSONLimits) {
        guard min(limits.maxDepth, JSONLimits.maximumDepth) <= JSONParser.recursionLimit,
            frame.count <= limits.maxBytes, frame.count < Int32.max, let raw = frame.baseAddress, frame.count > 0
        else { return nil }
        base = raw.assumingMemoryBound(to: UInt8.self)
        do throws(JSONError) {
            guard try scan(count: frame.count, maxDepth: limits.maxDepth) else { return nil }
        } catch {
            return nil
        }
    }

    /// A view of no call: an empty method name and no parameters. For holders of either a view or a parsed
    /// ``VarlinkCall``, which can then read a view in place instead of copying it out of an optional.
    package static var none: VarlinkCallView { VarlinkCallView() }

    private init() {
        base = Self.noBytes
    }

    /// The base of ``none``: one byte, never read or written, since a view without a method or parameters has
    /// nothing to read.
    private nonisolated(unsafe) static let noBytes = UnsafePointer(UnsafeMutablePointer<UInt8>.allocate(capacity: 1))

    /// Whether the method is a valid `interface.Member` name, which ``VarlinkCall/init(parsing:limits:)``
    /// requires. ``init(parsing:limits:)`` leaves this check to the caller, as a method compared equal to a valid
    /// name with ``methodIs(_:)`` passes it.
    package var hasValidMethodName: Bool {
        VarlinkNames.isValidQualifiedMemberName(
            bytes: UnsafeBufferPointer(start: base + methodStart, count: methodEnd - methodStart))
    }

    /// Scans the frame; returns false for a call the view does not describe.
    private mutating func scan(count: Int, maxDepth: Int) throws(JSONError) -> Bool {
        var parser = JSONParser(base: base, count: count, maxDepth: maxDepth)
        try parser.beginObject(depth: 0)
        var first = true
        var sawMethod = false
        while let name = try parser.nextMemberName(first: &first) {
            guard name.isPlain else { return false }
            if name.is("parameters") {
                guard try scanParameters(&parser) else { return false }
                continue
            }
            _ = try parser.peekSignificant()
            let value = try parser.scanValue(depth: 1)
            if name.is("method") {
                guard value.kind == .string, value.flag else { return false }
                methodStart32 = Int32(truncatingIfNeeded: value.start + 1)
                methodEnd32 = Int32(truncatingIfNeeded: value.end - 1)
                sawMethod = true
            } else if name.is("more") {
                guard let flag = Self.flag(value) else { return false }
                more = flag
            } else if name.is("oneway") {
                guard let flag = Self.flag(value) else { return false }
                oneway = flag
            } else if name.is("upgrade") {
                guard let flag = Self.flag(value) else { return false }
                upgrade = flag
            }
        }
        try parser.expectEnd()
        return sawMethod
    }

    private static func flag(_ value: ScannedValue) -> Bool? {
        switch value.kind {
        case .bool: return value.flag
        case .null: return false
        default: return nil
        }
    }

    /// Reads the value of a `parameters` member: an object, whose members are recorded, or `null`, which changes
    /// nothing. Returns false for anything else and for parameters the view does not describe.
    private mutating func scanParameters(_ parser: inout JSONParser) throws(JSONError) -> Bool {
        switch try parser.peekSignificant() {
        case UInt8(ascii: "{"):
            break
        case UInt8(ascii: "n"):
            return try parser.scanValue(depth: 1).kind == .null
        default:
            return false
        }
        parameters.removeAll()
        try parser.beginObject(depth: 1)
        var first = true
        while let name = try parser.nextMemberName(first: &first) {
            guard let nameBytes = name.plainBytes, let nameAddress = nameBytes.baseAddress else { return false }
            _ = try parser.peekSignificant()
            let value = try parser.scanValue(depth: 2)
            let nameStart = base.distance(to: nameAddress)
            guard parameters.append(nameStart: nameStart, nameEnd: nameStart + nameBytes.count, value: value) else {
                return false
            }
        }
        return true
    }

    /// Whether the method is `name`, e.g. `io.beacon.Properties.Get`.
    package func methodIs(_ name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        return methodEnd - methodStart == count && bytesEqual(base + methodStart, name.utf8Start, count: count)
    }

    /// The fully qualified method name.
    package var method: String {
        String(decoding: UnsafeBufferPointer(start: base + methodStart, count: methodEnd - methodStart), as: UTF8.self)
    }

    /// The call as a ``VarlinkCall``.
    package var call: VarlinkCall {
        var values: [String: JSONValue] = [:]
        for index in 0..<parameters.count {
            let member = parameters.name(at: index)
            let name = String(
                decoding: UnsafeBufferPointer(start: base + member.start, count: member.count), as: UTF8.self)
            values[name] = JSONValueView(base: base, scanned: parameters.value(at: index, base: base)).jsonValue
        }
        return VarlinkCall(method: method, parameters: values, more: more, oneway: oneway, upgrade: upgrade)
    }

    /// How many parameters the call has.
    package var parameterCount: Int { parameters.count }

    /// The parameter named `name` (the last one, when the call repeats it), `nil` when absent.
    package func parameter(_ name: StaticString) -> JSONValueView? {
        guard let index = parameters.lastIndex(named: name.utf8Start, count: name.utf8CodeUnitCount, base: base) else {
            return nil
        }
        return JSONValueView(base: base, scanned: parameters.value(at: index, base: base))
    }
}

/// One JSON value inside a ``VarlinkCallView``'s frame, valid as long as the view.
package struct JSONValueView {
    /// The JSON type of a value.
    package enum Kind: Sendable {
        case null, bool, number, string, array, object
    }

    private let base: UnsafePointer<UInt8>
    private let scanned: ScannedValue

    init(base: UnsafePointer<UInt8>, scanned: ScannedValue) {
        self.base = base
        self.scanned = scanned
    }

    package var kind: Kind {
        switch scanned.kind {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }

    /// The Boolean, if this is a Boolean.
    package var boolValue: Bool? { scanned.kind == .bool ? scanned.flag : nil }

    /// The integer, if this is a number the parser reads as ``JSONValue/int(_:)``.
    package var intValue: Int64? { scanned.kind == .number && scanned.flag ? scanned.integer : nil }

    /// The string's UTF-8, if this is a string written without escapes.
    package var unescapedUTF8: UnsafeBufferPointer<UInt8>? {
        guard scanned.kind == .string, scanned.flag else { return nil }
        return UnsafeBufferPointer(start: base + scanned.start + 1, count: scanned.end - scanned.start - 2)
    }

    /// The string, if this is a string.
    package var stringValue: String? {
        guard scanned.kind == .string else { return nil }
        if let utf8 = unescapedUTF8 { return String(decoding: utf8, as: UTF8.self) }
        var parser = parser()
        do throws(JSONError) {
            return try parser.parseString()
        } catch {
            preconditionFailure("a scanned string does not parse: \(error)")
        }
    }

    /// The value, as the parser builds it.
    package var jsonValue: JSONValue {
        var parser = parser()
        do throws(JSONError) {
            return try parser.parseValue(depth: 0)
        } catch {
            preconditionFailure("a scanned value does not parse: \(error)")
        }
    }

    /// The number of bytes ``appendCompact(to:)`` appends, when the value's text is already compact.
    package var compactByteCount: Int? { scanned.isCompact ? scanned.end - scanned.start : nil }

    /// Appends what ``JSONValue/encode(into:)`` appends for ``jsonValue`` (objects' members may come in another
    /// order).
    package func appendCompact(to buffer: inout [UInt8]) {
        if scanned.isCompact {
            let count = scanned.end - scanned.start
            buffer.append(contentsOf: UnsafeBufferPointer(start: base + scanned.start, count: count))
        } else {
            jsonValue.encode(into: &buffer)
        }
    }

    /// What ``appendCompact(to:)`` appends to an empty array.
    package var compactBytes: [UInt8] {
        guard scanned.isCompact else {
            var bytes: [UInt8] = []
            jsonValue.encode(into: &bytes)
            return bytes
        }
        return Array(UnsafeBufferPointer(start: base + scanned.start, count: scanned.end - scanned.start))
    }

    private func parser() -> JSONParser {
        JSONParser(base: base + scanned.start, count: scanned.end - scanned.start, maxDepth: JSONParser.recursionLimit)
    }
}

/// Up to six parameters of a call, stored inline in 16 bytes each, so that the whole view stays within 128 bytes:
/// a copy of it is then a few vector moves, not a call to `memcpy` (a Get copies its view several times).
private struct ParameterMembers {
    private static let capacity = 6

    /// One member: offsets in the frame, the name's length, and the value's kind and flags.
    private struct Member {
        var nameStart: Int32 = 0
        var valueStart: Int32 = 0
        var valueEnd: Int32 = 0
        var nameCount: UInt16 = 0
        /// The value's kind in the low 3 bits, `flag` in bit 3, `isCompact` in bit 4.
        var bits: UInt8 = 0
    }

    private var members: (Member, Member, Member, Member, Member, Member) = (
        Member(), Member(), Member(), Member(), Member(), Member()
    )
    private var count8: UInt8 = 0

    var count: Int { Int(count8) }

    mutating func removeAll() { count8 = 0 }

    /// Appends a member; false when there is no room, or its name is longer than 65,535 bytes.
    mutating func append(nameStart: Int, nameEnd: Int, value: ScannedValue) -> Bool {
        guard count < Self.capacity, nameEnd - nameStart <= Int(UInt16.max) else { return false }
        let index = count
        let member = Member(
            nameStart: Int32(truncatingIfNeeded: nameStart), valueStart: Int32(truncatingIfNeeded: value.start),
            valueEnd: Int32(truncatingIfNeeded: value.end), nameCount: UInt16(truncatingIfNeeded: nameEnd - nameStart),
            bits: value.kind.rawValue | (value.flag ? 8 : 0) | (value.isCompact ? 16 : 0))
        withUnsafeMutablePointer(to: &members) { pointer in
            pointer.withMemoryRebound(to: Member.self, capacity: Self.capacity) { members in members[index] = member }
        }
        count8 &+= 1
        return true
    }

    @inline(__always)
    private func member(at index: Int) -> Member {
        switch index {
        case 0: members.0
        case 1: members.1
        case 2: members.2
        case 3: members.3
        case 4: members.4
        default: members.5
        }
    }

    /// The offset and length of the name of the member at `index`.
    func name(at index: Int) -> (start: Int, count: Int) {
        let member = member(at: index)
        return (Int(member.nameStart), Int(member.nameCount))
    }

    /// The index of the last member named by the `count` bytes at `name`, whose names are in the frame at `base`.
    @inline(__always)
    func lastIndex(named name: UnsafePointer<UInt8>, count: Int, base: UnsafePointer<UInt8>) -> Int? {
        var index = self.count
        while index > 0 {
            index &-= 1
            let member = member(at: index)
            if Int(member.nameCount) == count && bytesEqual(base + Int(member.nameStart), name, count: count) {
                return index
            }
        }
        return nil
    }

    /// The value of the member at `index`, in the frame at `base`. An integer is read again from its digits,
    /// which the scan already checked.
    func value(at index: Int, base: UnsafePointer<UInt8>) -> ScannedValue {
        let member = member(at: index)
        var value = ScannedValue()
        value.kind = ScannedValue.Kind(rawValue: member.bits & 7) ?? .null
        value.flag = member.bits & 8 != 0
        value.isCompact = member.bits & 16 != 0
        value.start = Int(member.valueStart)
        value.end = Int(member.valueEnd)
        if value.kind == .number && value.flag {
            var parser = JSONParser(base: base + value.start, count: value.end - value.start, maxDepth: 1)
            guard case .int(let integer)? = try? parser.parseNumber() else {
                preconditionFailure("a scanned integer does not parse")
            }
            value.integer = integer
        }
        return value
    }
}
