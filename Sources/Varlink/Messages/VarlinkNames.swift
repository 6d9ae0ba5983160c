/// Syntax checks for the names varlink uses.
public enum VarlinkNames {
    /// A reverse-domain interface name of at least two dot-separated parts, e.g. `io.beacon.Properties`: each part
    /// is letters, digits and inner hyphens, and the first part starts with a letter.
    public static func isValidInterfaceName(_ name: some StringProtocol) -> Bool {
        withBytes(name) { interfaceName($0) }
    }

    /// A method, error or type name: an uppercase letter followed by letters and digits, e.g. `GetInfo`.
    public static func isValidMemberName(_ name: some StringProtocol) -> Bool {
        withBytes(name) { memberName($0) }
    }

    /// A field or enum value name: a letter, then letters and digits with single underscores between them.
    public static func isValidFieldName(_ name: some StringProtocol) -> Bool {
        withBytes(name) { fieldName($0) }
    }

    /// A fully qualified method or error name, `interface.Member`.
    public static func isValidQualifiedMemberName(_ name: some StringProtocol) -> Bool {
        withBytes(name) { isValidQualifiedMemberName(bytes: $0) }
    }

    /// A fully qualified method or error name, `interface.Member`, given as UTF-8.
    static func isValidQualifiedMemberName(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        var dot = bytes.count - 1
        while dot > 0 && base[dot] != UInt8(ascii: ".") { dot -= 1 }
        guard dot > 0 else { return false }
        return memberName(UnsafeBufferPointer(start: base + dot + 1, count: bytes.count - dot - 1))
            && interfaceName(UnsafeBufferPointer(start: base, count: dot))
    }

    private static func withBytes(_ name: some StringProtocol, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        if var string = name as? String { return string.withUTF8(body) }
        if let result = name.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = String(name)
        return copy.withUTF8(body)
    }

    private static func interfaceName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var segments = 0
        var segmentLength = 0
        var previous = UInt8(ascii: ".")
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if segmentLength == 0 || previous == UInt8(ascii: "-") { return false }
                segments += 1
                segmentLength = 0
            } else if isLetter(byte) || isDigit(byte) {
                if segments == 0 && segmentLength == 0 && !isLetter(byte) { return false }
                segmentLength += 1
            } else if byte == UInt8(ascii: "-") {
                if segmentLength == 0 { return false }
                segmentLength += 1
            } else {
                return false
            }
            previous = byte
        }
        if segmentLength == 0 || previous == UInt8(ascii: "-") { return false }
        return segments >= 1
    }

    private static func memberName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") else { return false }
        for byte in bytes where !(isLetter(byte) || isDigit(byte)) { return false }
        return true
    }

    private static func fieldName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, isLetter(first) else { return false }
        var previousUnderscore = false
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "_") {
                if previousUnderscore { return false }
                previousUnderscore = true
            } else if isLetter(byte) || isDigit(byte) {
                previousUnderscore = false
            } else {
                return false
            }
        }
        return !previousUnderscore
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
