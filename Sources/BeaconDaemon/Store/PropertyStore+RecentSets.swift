import BeaconConfiguration

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension PropertyStore {
    /// The file beside the store that keeps the Sets of the last run (``RecentSets``): the magic `BEACONR1`, the
    /// floor and the end (8 bytes each, little-endian), then per Set its version (8 bytes), its key's length
    /// (4 bytes) and the key, in version order.
    var recentSetsPath: String { path + "-recent" }

    static let recentSetsMagic = Array("BEACONR1".utf8)

    func saveRecentSets(_ sets: RecentSets) -> Bool {
        // Binary, written in place: as text, the decimal versions alone cost 300 instructions per Set kept at every
        // stop, and appending each field to an array 100 per field.
        var size = 24
        for (_, name) in sets.sets { size += 12 + name.utf8.count }
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            raw.copyBytes(from: Self.recentSetsMagic)
            raw.storeBytes(of: sets.floor.littleEndian, toByteOffset: 8, as: Int64.self)
            raw.storeBytes(of: sets.end.littleEndian, toByteOffset: 16, as: Int64.self)
            var offset = 24
            for (version, name) in sets.sets {
                var name = name
                name.withUTF8 { key in
                    raw.storeBytes(of: version.littleEndian, toByteOffset: offset, as: Int64.self)
                    raw.storeBytes(
                        of: UInt32(truncatingIfNeeded: key.count).littleEndian, toByteOffset: offset + 8,
                        as: UInt32.self)
                    UnsafeMutableRawBufferPointer(rebasing: raw[(offset + 12)...]).copyMemory(
                        from: UnsafeRawBufferPointer(key))
                    offset += 12 + key.count
                }
            }
            initialized = offset
        }
        let temporary = recentSetsPath + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let written = bytes.withUnsafeBytes { POSIX.writeAll(fd, $0) }
        Glibc.close(fd)
        guard written else {
            unlink(temporary)
            return false
        }
        return rename(temporary, recentSetsPath) == 0
    }

    func savedRecentSets() -> RecentSets? {
        var error: Int32 = 0
        guard let bytes = POSIX.readFile(recentSetsPath, limit: 64 << 20, error: &error), bytes.count >= 24,
            bytes.starts(with: Self.recentSetsMagic)
        else { return nil }
        return bytes.withUnsafeBytes { raw -> RecentSets? in
            func integer<T: FixedWidthInteger>(at offset: Int, as type: T.Type) -> T {
                T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
            }
            let floor = integer(at: 8, as: Int64.self)
            let end = integer(at: 16, as: Int64.self)
            var sets: [(version: Int64, name: String)] = []
            var offset = 24
            var last = floor
            while offset < raw.count {
                guard raw.count - offset >= 12 else { return nil }
                let version = integer(at: offset, as: Int64.self)
                let length = Int(integer(at: offset + 8, as: UInt32.self))
                offset += 12
                guard version > last, version <= end, length > 0, raw.count - offset >= length else { return nil }
                sets.append((version, String(decoding: raw[offset..<(offset + length)], as: UTF8.self)))
                offset += length
                last = version
            }
            return RecentSets(floor: floor, end: end, sets: sets)
        }
    }
}
