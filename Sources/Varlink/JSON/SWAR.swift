/// Eight-bytes-at-a-time tests for the string scanners ("SIMD within a register").
package enum SWAR {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of each byte of `word` that is `"`, `\` or a control character (below 0x20), with `word`
    /// loaded little-endian. The lowest bit set marks exactly the first such byte; bits above it may be spurious.
    @inline(__always)
    static func escapeBits(_ word: UInt64) -> UInt64 {
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        return ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (word &- ones &* 0x20) & ~word)
            & highBits
    }

    /// The offset of the first byte at or after `index` (and before `end`) that JSON must escape in a string
    /// (`"`, `\` or a control character), or `end` when there is none.
    @inline(__always)
    package static func firstEscape(_ base: UnsafePointer<UInt8>, from index: Int, end: Int) -> Int {
        var index = index
        while index &+ 8 <= end {
            let bits = escapeBits(UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)))
            if bits != 0 { return index &+ bits.trailingZeroBitCount &>> 3 }
            index &+= 8
        }
        while index < end {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { return index }
            index &+= 1
        }
        return end
    }
}

extension SWAR {
    /// The high bit of each byte of `word` that is `"`, `\`, a control character or non-ASCII, with `word`
    /// loaded little-endian. The lowest bit set marks exactly the first such byte; bits above it may be spurious.
    @inline(__always)
    static func attentionBits(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let zeroQuote = (quote &- ones) & ~quote
        let zeroBackslash = (backslash &- ones) & ~backslash
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control | word) & 0x8080_8080_8080_8080
    }

    /// The offset of the first byte at or after `index` (and before `end`) that is `"`, `\`, a control character
    /// or non-ASCII, or `end` when there is none.
    @inline(__always)
    static func firstAttention(_ base: UnsafePointer<UInt8>, from index: Int, end: Int) -> Int {
        var index = index
        while index &+ 8 <= end {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let bits = attentionBits(word)
            if bits != 0 { return index &+ bits.trailingZeroBitCount &>> 3 }
            index &+= 8
        }
        while index < end {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return index }
            index &+= 1
        }
        return end
    }
}
