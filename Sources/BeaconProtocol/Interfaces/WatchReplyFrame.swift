/// A reply of `io.beacon.Properties.Watch` read straight from its frame: the envelope, the reply's parameters,
/// the changes and their origins are read member by member, with no dictionary built; only a change's value (and
/// old value) becomes a ``JSONValue``. An error reply is parsed as any reply.
package struct WatchReplyFrame {
    /// One change as it appears in the reply.
    package struct Change {
        package var key = ""
        /// The value; `nil` when the member is absent.
        package var value: JSONValue?
        package var old: JSONValue?
        package var version: Int64 = 0
        package var deleted = false
        package var isDefault = false
        package var isLocked = false
        package var origin: Origin?

        /// The value the key shows after the change: `nil` for a deletion, JSON null when the member is absent.
        package var shownValue: JSONValue? {
            // JSONValue is ExpressibleByNilLiteral: a bare `nil` would be JSON null here.
            deleted ? Optional<JSONValue>.none : .some(value ?? .null)
        }
    }

    /// Who made a change.
    package struct Origin {
        package var uid: Int64 = 0
        package var pid: Int64 = 0
        package var command: String?
        /// The machine a change came from, for a change a provider brought from elsewhere (beacon-fleet).
        package var machine: String?
    }

    /// The error, for an error reply; the other members are then empty.
    package var error: VarlinkError?
    package var continues = false
    package var version: Int64?
    package var resync = false
    package var overflow: Int64 = 0

    /// Parses `frame` (without its NUL), handing each change to `change` in order. Unknown members are skipped.
    package init(
        parsing frame: UnsafeRawBufferPointer,
        limits: JSONLimits,
        change: (consuming Change) -> Void
    ) throws(VarlinkError) {
        var parser = try Self.json { () throws(JSONError) in try JSONParser(frame, limits: limits) }
        try Self.json { () throws(JSONError) in try parser.beginObject(depth: 0) }
        var first = true
        while let name = try Self.json({ () throws(JSONError) in try parser.nextMemberName(first: &first) }) {
            if name.is("error") {
                // Error replies are rare: read the whole frame again as a plain reply.
                let reply = try VarlinkReply(parsing: frame, limits: limits)
                self = WatchReplyFrame()
                error = reply.varlinkError
                return
            }
            if name.is("parameters") {
                try readParameters(&parser, change)
            } else if name.is("continues") {
                continues = try Self.bool(&parser, depth: 1)
            } else {
                _ = try Self.value(&parser, depth: 1)
            }
        }
        try Self.json { () throws(JSONError) in try parser.expectEnd() }
    }

    /// `body`, its JSON error reported as a malformed message.
    @inline(__always)
    private static func json<T>(_ body: () throws(JSONError) -> T) throws(VarlinkError) -> T {
        do {
            return try body()
        } catch {
            throw VarlinkError.protocolError("malformed message: \(error)")
        }
    }

    private static func value(_ parser: inout JSONParser, depth: Int) throws(VarlinkError) -> JSONValue {
        try json { () throws(JSONError) in try parser.parseValue(depth: depth) }
    }

    private init() {}

    private mutating func readParameters(
        _ parser: inout JSONParser,
        _ change: (consuming Change) -> Void
    ) throws(VarlinkError) {
        try Self.json { () throws(JSONError) in try parser.beginObject(depth: 1) }
        var first = true
        while let name = try Self.json({ () throws(JSONError) in try parser.nextMemberName(first: &first) }) {
            if name.is("changes") {
                try Self.json { () throws(JSONError) in try parser.beginArray(depth: 2) }
                var firstElement = true
                while try Self.json({ () throws(JSONError) in try parser.nextElement(first: &firstElement) }) {
                    change(try Self.readChange(&parser))
                }
            } else if name.is("version") {
                version = try Self.integer(&parser, depth: 2, "version")
            } else if name.is("resync") {
                resync = try Self.bool(&parser, depth: 2)
            } else if name.is("overflow") {
                overflow = try Self.integer(&parser, depth: 2, "overflow")
            } else {
                _ = try Self.value(&parser, depth: 2)
            }
        }
    }

    private static func readChange(_ parser: inout JSONParser) throws(VarlinkError) -> Change {
        var change = Change()
        var sawKey = false
        try json { () throws(JSONError) in try parser.beginObject(depth: 2) }
        var first = true
        while let name = try json({ () throws(JSONError) in try parser.nextMemberName(first: &first) }) {
            // In the order the daemon writes them.
            if name.is("key") {
                guard let key = try json({ () throws(JSONError) in try parser.parseStringValue(depth: 3) }) else {
                    throw VarlinkError.protocolError("a change's \"key\" is not a string")
                }
                change.key = key
                sawKey = true
            } else if name.is("value") {
                change.value = try value(&parser, depth: 3)
            } else if name.is("version") {
                change.version = try integer(&parser, depth: 3, "version")
            } else if name.is("deleted") {
                change.deleted = try bool(&parser, depth: 3)
            } else if name.is("origin") {
                change.origin = try readOrigin(&parser)
            } else if name.is("old") {
                change.old = try value(&parser, depth: 3)
            } else if name.is("default") {
                change.isDefault = try bool(&parser, depth: 3)
            } else if name.is("locked") {
                change.isLocked = try bool(&parser, depth: 3)
            } else {
                _ = try value(&parser, depth: 3)
            }
        }
        guard sawKey else { throw VarlinkError.protocolError("a change has no \"key\"") }
        return change
    }

    private static func readOrigin(_ parser: inout JSONParser) throws(VarlinkError) -> Origin? {
        guard try json({ () throws(JSONError) in try parser.peekSignificant() }) == UInt8(ascii: "{") else {
            _ = try value(&parser, depth: 3)
            return nil
        }
        var origin = Origin()
        try json { () throws(JSONError) in try parser.beginObject(depth: 3) }
        var first = true
        while let name = try json({ () throws(JSONError) in try parser.nextMemberName(first: &first) }) {
            if name.is("uid") {
                origin.uid = try integer(&parser, depth: 4, "uid")
            } else if name.is("pid") {
                origin.pid = try integer(&parser, depth: 4, "pid")
            } else if name.is("command") {
                origin.command = try json { () throws(JSONError) in try parser.parseStringValue(depth: 4) }
            } else if name.is("machine") {
                origin.machine = try json { () throws(JSONError) in try parser.parseStringValue(depth: 4) }
            } else {
                _ = try value(&parser, depth: 4)
            }
        }
        return origin
    }

    /// A boolean member; any other value counts as `false`.
    private static func bool(_ parser: inout JSONParser, depth: Int) throws(VarlinkError) -> Bool {
        try json { () throws(JSONError) in try parser.parseBool(depth: depth) } ?? false
    }

    private static func integer(
        _ parser: inout JSONParser, depth: Int, _ what: StaticString
    ) throws(VarlinkError) -> Int64 {
        guard let number = try json({ () throws(JSONError) in try parser.parseInteger(depth: depth) }) else {
            throw VarlinkError.protocolError("\"\(what)\" is not an integer")
        }
        return number
    }
}
