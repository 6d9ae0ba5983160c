extension StringProtocol {
    /// Whether `part` occurs in the string, compared byte for byte in UTF-8.
    ///
    /// The daemon's code uses this rather than `contains(_:)` with a string argument, which lives in the
    /// standard library's `_StringProcessing` module: its code is not split into functions for the linker, so one
    /// search made all 387 KiB of it resident in the daemon.
    package func containsBytes(_ part: String) -> Bool {
        Array(utf8).containsBytes(Array(part.utf8))
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    package func containsBytes(_ needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        guard count >= needle.count else { return false }
        for start in 0...(count - needle.count) where self[start] == first {
            if self[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }
}
