/// Eight-bytes-at-a-time tests for the string scanners ("SIMD within a register").
enum SWAR {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Whether some byte of `word` is zero. May also flag bytes above a zero byte, never misses one.
    @inline(__always)
    private static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highBits != 0
    }

    /// Whether some byte of `word` is `"`, `\` or a control character (below 0x20).
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> Bool {
        hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
            || (word &- ones &* 0x20) & ~word & highBits != 0
    }

    /// Whether some byte of `word` ends the fast path of string parsing: `"`, `\`, a control character or a
    /// non-ASCII byte.
    @inline(__always)
    static func needsAttention(_ word: UInt64) -> Bool {
        word & highBits != 0 || needsEscape(word)
    }
}
