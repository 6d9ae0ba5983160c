extension StringProtocol {
    /// Whether `part` occurs in the string, compared byte for byte in UTF-8.
    ///
    /// The daemon's code uses this rather than `contains(_:)` with a string argument, which lives in the
    /// standard library's `_StringProcessing` module: its code is not split into functions for the linker, so one
    /// search made all 387 KiB of it resident in the daemon.
    package func containsBytes(_ part: String) -> Bool {
        let needle = Array(part.utf8)
        guard let first = needle.first else { return true }
        let haystack = Array(utf8)
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == first {
            if haystack[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }
}
