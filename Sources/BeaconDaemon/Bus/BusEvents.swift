import BeaconProtocol

/// One change of one property. A value, not an object: a Set makes one per change, and allocating and freeing an
/// object for each cost more than anything else the change event does. Replies are encoded once per distinct
/// selection of a tick's events (``BeaconBus`` shares each encoded selection among its subscribers), so an event
/// is encoded again only for subscribers whose selections differ.
struct ChangeEvent {
    let key: PropertyKey
    /// The new value's JSON text; `nil` for a deletion.
    let value: [UInt8]?
    /// The previous value's JSON text; `nil` when the key did not exist.
    let old: [UInt8]?
    let version: Int64
    let origin: Origin
    /// Where the value comes from when not from the store (a default, a lock).
    var flags: Flags = []

    struct Flags: OptionSet {
        let rawValue: UInt8
        /// The value is the schema's default: the key has no stored value.
        static let isDefault = Flags(rawValue: 1)
        /// A lockdown file locks the key.
        static let locked = Flags(rawValue: 2)
    }

    /// This change merged with `earlier`, a change of the same key not yet delivered: the latest value, version,
    /// origin and flags, with the earliest old value.
    func coalesced(after earlier: ChangeEvent) -> ChangeEvent {
        ChangeEvent(key: key, value: value, old: earlier.old, version: version, origin: origin, flags: flags)
    }

    /// Appends the `Change` object's JSON to `buffer`, with or without the old value and the origin.
    func encode(into buffer: inout [UInt8], includingOld: Bool, includingOrigin: Bool) {
        let old = includingOld ? self.old : nil
        // The fixed parts, `,"origin":` (10 bytes) among them.
        let size =
            key.rawValue.utf8.count + (value.map { $0.count + 10 } ?? 1) + (old.map { $0.count + 7 } ?? 0)
            + JSONWriter.decimalLength(version) + (value == nil ? 44 : 45)
            + (includingOrigin ? origin.encodedJSON.count : -10) + 1 + (flags.isEmpty ? 0 : 30)
        JSONWriter.append(count: size, to: &buffer) { out in
            // Keys are made of [A-Za-z0-9_.-]: nothing to escape.
            out.write("{\"key\":\"")
            out.writeUnescaped(key.rawValue)
            if let value {
                out.write("\",\"value\":")
                out.write(value)
            } else {
                out.write(byte: UInt8(ascii: "\""))
            }
            if let old {
                out.write(",\"old\":")
                out.write(old)
            }
            out.write(",\"version\":")
            out.write(int: version)
            if includingOrigin {
                out.write(value == nil ? ",\"deleted\":true,\"origin\":" : ",\"deleted\":false,\"origin\":")
                out.write(origin.encodedJSON)
            } else {
                out.write(value == nil ? ",\"deleted\":true" : ",\"deleted\":false")
            }
            if !flags.isEmpty {
                if flags.contains(.isDefault) { out.write(",\"default\":true") }
                if flags.contains(.locked) { out.write(",\"locked\":true") }
            }
            out.write(byte: UInt8(ascii: "}"))
        }
    }
}

/// One posted notification, delivered to every observer it goes to.
struct NotificationEvent {
    let name: PropertyKey
    let sequence: Int64
    /// Where the `Notification` object's JSON is in the bytes of its tick's notifications.
    let start: Int
    let end: Int
    /// Where the poster's object string is in the tick's objects (``FanOut``), -1 when it gave none. An index
    /// rather than the string: events are copied while they are selected, and a string would be retained each time.
    var object: Int32 = -1
    /// Posted with `deliverImmediately`: suspended observers get it at once.
    var immediate = false

    /// Starts the JSON of a notification named `name` in `bytes`: `{"name":"…"`; the userInfo may follow.
    static func begin(_ name: PropertyKey, into bytes: inout [UInt8]) {
        JSONWriter.append(count: name.rawValue.utf8.count + 10, to: &bytes) { out in
            // Names are made of [A-Za-z0-9_.-]: nothing to escape.
            out.write("{\"name\":\"")
            out.writeUnescaped(name.rawValue)
            out.write(byte: UInt8(ascii: "\""))
        }
    }

    /// Appends the `object` member to the JSON begun with ``begin(_:into:)``.
    static func appendObject(_ object: String, into bytes: inout [UInt8]) {
        JSONWriter.appendASCII(",\"object\":", to: &bytes)
        JSONWriter.appendString(object, to: &bytes)
    }

    /// Ends the JSON begun with ``begin(_:into:)`` (and the userInfo) in `bytes` with the sequence number and the
    /// origin's JSON.
    static func end(sequence: Int64, origin: [UInt8], into bytes: inout [UInt8]) {
        JSONWriter.append(count: JSONWriter.decimalLength(sequence) + origin.count + 23, to: &bytes) { out in
            out.write(",\"sequence\":")
            out.write(int: sequence)
            out.write(",\"origin\":")
            out.write(origin)
            out.write(byte: UInt8(ascii: "}"))
        }
    }
}

/// Encodes the streamed replies of Watch and Observe.
enum StreamReply {
    /// `{"parameters":{"changes":[…],"version":V,…},"continues":true}` and the NUL, for the changes at `positions`
    /// of `events`, each with or without its old value and its origin.
    static func changes(
        _ positions: some Sequence<Int32>,
        of events: [ChangeEvent],
        includingOld: Bool,
        includingOrigin: Bool,
        version: Int64,
        resync: Bool = false,
        overflow: Int = 0,
        into buffer: inout [UInt8]
    ) {
        JSONWriter.appendASCII("{\"parameters\":{\"changes\":[", to: &buffer)
        var first = true
        for position in positions {
            if !first { buffer.append(UInt8(ascii: ",")) }
            first = false
            events[Int(position)].encode(into: &buffer, includingOld: includingOld, includingOrigin: includingOrigin)
        }
        JSONWriter.appendASCII("],\"version\":", to: &buffer)
        JSONWriter.appendInt(version, to: &buffer)
        if resync { JSONWriter.appendASCII(",\"resync\":true", to: &buffer) }
        if overflow > 0 {
            JSONWriter.appendASCII(",\"overflow\":", to: &buffer)
            JSONWriter.appendInt(Int64(overflow), to: &buffer)
        }
        JSONWriter.appendASCII("},\"continues\":true}", to: &buffer)
        buffer.append(0)
    }

    /// `{"parameters":{"notifications":[],"sequence":S,…},"continues":true}` and the NUL: the first reply of an
    /// Observe, or a report of dropped notifications.
    static func noNotifications(sequence: Int64, overflow: Int = 0, into buffer: inout [UInt8]) {
        notifications([], of: [], in: [], sequence: sequence, overflow: overflow, into: &buffer)
    }

    /// `{"parameters":{"notifications":[…],"sequence":S,…},"continues":true}` and the NUL, for the notifications
    /// at `positions` of `events`, whose encoded texts lie in `bytes`.
    static func notifications(
        _ positions: [Int32],
        of events: [NotificationEvent],
        in bytes: [UInt8],
        sequence: Int64,
        overflow: Int = 0,
        into buffer: inout [UInt8]
    ) {
        JSONWriter.appendASCII("{\"parameters\":{\"notifications\":[", to: &buffer)
        bytes.withUnsafeBufferPointer { bytes in
            var first = true
            for position in positions {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                let event = events[Int(position)]
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[event.start..<event.end]))
            }
        }
        endNotifications(sequence: sequence, overflow: overflow, into: &buffer)
    }

    /// `{"parameters":{"notifications":[…],"sequence":S,…},"continues":true}` and the NUL, for notifications
    /// given as their JSON texts.
    static func notifications(_ texts: [[UInt8]], sequence: Int64, overflow: Int, into buffer: inout [UInt8]) {
        JSONWriter.appendASCII("{\"parameters\":{\"notifications\":[", to: &buffer)
        for (index, text) in texts.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            buffer.append(contentsOf: text)
        }
        endNotifications(sequence: sequence, overflow: overflow, into: &buffer)
    }

    /// `],"sequence":S,"overflow":N},"continues":true}` and the NUL.
    private static func endNotifications(sequence: Int64, overflow: Int, into buffer: inout [UInt8]) {
        JSONWriter.appendASCII("],\"sequence\":", to: &buffer)
        JSONWriter.appendInt(sequence, to: &buffer)
        if overflow > 0 {
            JSONWriter.appendASCII(",\"overflow\":", to: &buffer)
            JSONWriter.appendInt(Int64(overflow), to: &buffer)
        }
        JSONWriter.appendASCII("},\"continues\":true}", to: &buffer)
        buffer.append(0)
    }
}
