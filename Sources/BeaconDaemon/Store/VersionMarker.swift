#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small file beside the store that remembers the version ceiling and the highest version the store was given,
/// so that a store that lost its tail (a damaged or truncated write-ahead log) cannot make the bus hand out a
/// version twice, and the loss is noticed.
///
/// A magic number, the ceiling, the highest stored version and the key of the row that has it (its length, then its
/// bytes), little-endian. A start checks that row instead of reading every row for the highest version. It is
/// rewritten in place after every commit that stored something; the ceiling is synced to disk before any version
/// above the old one is used. A marker of the first format (24 bytes, no key) is still read.
final class VersionMarker {
    struct Contents: Equatable {
        var ceiling: Int64
        var stored: Int64
        /// The key of the property or tombstone row stored at version `stored`; `nil` in a marker of the first
        /// format, or before anything was stored.
        var storedKey: String? = nil
    }

    private static let magicWithoutKey: UInt64 = 0x3156_4e4f_4341_4542  // "BEACONV1"
    private static let magic: UInt64 = 0x3256_4e4f_4341_4542  // "BEACONV2"
    /// The longest key a marker holds; a longer one is recorded as no key.
    private static let maxKeyLength = 4096
    let path: String
    private let fd: Int32
    private var written = Contents(ceiling: 0, stored: 0)
    private var synced: Int64 = 0
    /// What ``record(_:)`` writes, kept from one write to the next.
    private var buffer: [UInt8] = []

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
        var bytes = [UInt8](repeating: 0, count: 32 + Self.maxKeyLength)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 24 else { return nil }
        func word(_ index: Int) -> UInt64 {
            bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        }
        var contents = Contents(ceiling: Int64(bitPattern: word(1)), stored: Int64(bitPattern: word(2)))
        switch word(0) {
        case Self.magicWithoutKey:
            break
        case Self.magic:
            guard count >= 32 else { return nil }
            let length = Int(truncatingIfNeeded: word(3))
            guard length >= 0, length <= Self.maxKeyLength, count >= 32 + length else { return nil }
            if length > 0 { contents.storedKey = String(decoding: bytes[32..<(32 + length)], as: UTF8.self) }
        default:
            return nil
        }
        written = contents
        synced = contents.ceiling
        return contents
    }

    /// Records `contents`; syncs the file when the ceiling rose. Returns false when the write failed.
    @discardableResult
    func record(_ contents: Contents) -> Bool {
        guard contents != written else { return true }
        // Written after every commit: in a buffer kept for it, without an array per field.
        var key = contents.storedKey ?? ""
        let length = key.withUTF8 { key in
            let length = key.count <= Self.maxKeyLength ? key.count : 0
            if buffer.count < 32 + length { buffer = [UInt8](repeating: 0, count: 32 + length) }
            buffer.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: Self.magic.littleEndian, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: UInt64(bitPattern: contents.ceiling).littleEndian, toByteOffset: 8, as: UInt64.self)
                raw.storeBytes(of: UInt64(bitPattern: contents.stored).littleEndian, toByteOffset: 16, as: UInt64.self)
                raw.storeBytes(of: UInt64(length).littleEndian, toByteOffset: 24, as: UInt64.self)
                UnsafeMutableRawBufferPointer(rebasing: raw[32...]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(key)[..<length]))
            }
            return length
        }
        let count = buffer.withUnsafeBytes { pwrite(fd, $0.baseAddress, 32 + length, 0) }
        guard count == 32 + length else { return false }
        written = contents
        if contents.ceiling > synced {
            guard fsync(fd) == 0 else { return false }
            synced = contents.ceiling
        }
        return true
    }
}
