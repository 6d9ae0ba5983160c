#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small file beside the store that remembers the version ceiling and the highest version the store was given,
/// so that a store that lost its tail (a damaged or truncated write-ahead log) cannot make the bus hand out a
/// version twice, and the loss is noticed.
///
/// 24 bytes: a magic number, the ceiling and the highest stored version, little-endian. It is rewritten in place
/// after every commit that stored something; the ceiling is synced to disk before any version above the old one
/// is used.
final class VersionMarker {
    struct Contents: Equatable {
        var ceiling: Int64
        var stored: Int64
    }

    private static let magic: UInt64 = 0x3156_4e4f_4341_4542  // "BEACONV1"
    let path: String
    private let fd: Int32
    private var written = Contents(ceiling: 0, stored: 0)
    private var synced: Int64 = 0

    /// Opens or creates the file at `path`; `nil` when it cannot.
    init?(path: String) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        self.path = path
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// What the file holds; `nil` when it is new, short or not a marker.
    func read() -> Contents? {
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        let count = withUnsafeMutableBytes(of: &words) { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count == 24, UInt64(littleEndian: words.0) == Self.magic else { return nil }
        let contents = Contents(
            ceiling: Int64(bitPattern: UInt64(littleEndian: words.1)),
            stored: Int64(bitPattern: UInt64(littleEndian: words.2)))
        written = contents
        synced = contents.ceiling
        return contents
    }

    /// Records `contents`; syncs the file when the ceiling rose. Returns false when the write failed.
    @discardableResult
    func record(_ contents: Contents) -> Bool {
        guard contents != written else { return true }
        let words = (
            Self.magic.littleEndian, UInt64(bitPattern: contents.ceiling).littleEndian,
            UInt64(bitPattern: contents.stored).littleEndian
        )
        let count = withUnsafeBytes(of: words) { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard count == 24 else { return false }
        written = contents
        if contents.ceiling > synced {
            guard fsync(fd) == 0 else { return false }
            synced = contents.ceiling
        }
        return true
    }
}
