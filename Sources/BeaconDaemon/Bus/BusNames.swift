import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How the bus reads what clients name and send: keys and patterns under the configured limits, the reserved first
/// segments, and the byte-level checks of the hot paths.
enum BusNames {
    /// The first segments of the daemon's own keys and notifications: no client may set or post below them.
    static let reservedPrefixes: [String] = ["lifecycle", "session", "system", "desktop", "daemon"]

    static func isReserved(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { utf8 in
            var end = 0
            while end < utf8.count && utf8[end] != UInt8(ascii: ".") { end += 1 }
            // Cheap rejection before the comparison: every reserved first segment is 6 to 9 bytes long.
            guard (6...9).contains(end) else { return false }
            let first = UnsafeBufferPointer(rebasing: utf8[0..<end])
            return reservedPrefixes.contains { first.elementsEqual($0.utf8) }
        }
    }

    /// Whether two compact JSON texts are the same: what a Get would return does not change. Objects keep their
    /// members' order, so the same members in another order are another text. Compared with `memcmp`: a Set of a
    /// new value pays a few instructions for it, not a walk over the bytes.
    static func sameValue(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }

    static func isASCII(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { isASCII($0) }
    }

    /// Whether every byte is below 0x80, eight at a time.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var index = 0
        var high: UInt64 = 0
        while index &+ 8 <= bytes.count {
            high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index &+= 8
        }
        while index < bytes.count {
            high |= UInt64(base[index])
            index &+= 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }
}

extension DaemonLimits {
    /// `string` as a key, or `io.beacon.InvalidKey`.
    func parseKey(_ string: String) throws(VarlinkError) -> PropertyKey {
        do {
            return try PropertyKey(string, limits: keyLimits)
        } catch {
            throw BusError.invalidKey(string, reason: error.reason)
        }
    }

    /// `strings` as the patterns of a Watch, Observe or Provide of `interface`, at most ``maxPatterns`` of them.
    func parsePatterns(_ strings: [String], interface: String) throws(VarlinkError) -> [KeyPattern] {
        guard strings.count <= maxPatterns else {
            throw BusError.limitExceeded("maxPatterns", maximum: maxPatterns)
        }
        var patterns: [KeyPattern] = []
        patterns.reserveCapacity(strings.count)
        for string in strings {
            do {
                patterns.append(try KeyPattern(string, limits: keyLimits))
            } catch {
                throw BusError.invalidPattern(interface, string, reason: error.reason)
            }
        }
        return patterns
    }
}
