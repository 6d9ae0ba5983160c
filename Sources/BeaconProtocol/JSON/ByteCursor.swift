/// Writes bytes into space already reserved for them, with no capacity check per write.
///
/// Made by ``JSONWriter/append(count:to:_:)``, which reserves the space and hands out a cursor at its start. Each append to a `[UInt8]` checks the array's uniqueness and capacity, which for the short
/// literals of a JSON message costs more than copying them; a message written through one cursor pays that once.
public struct ByteCursor {
    @usableFromInline var pointer: UnsafeMutablePointer<UInt8>
    @usableFromInline let end: UnsafeMutablePointer<UInt8>

    @usableFromInline
    init(_ start: UnsafeMutablePointer<UInt8>, count: Int) {
        pointer = start
        end = start + count
    }

    @inlinable @inline(__always)
    func checkRoom(_ count: Int) {
        precondition(end - pointer >= count, "ByteCursor: more bytes written than reserved")
    }

    /// Writes the bytes of an ASCII literal.
    @inlinable @inline(__always)
    public mutating func write(_ literal: StaticString) {
        write(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Writes one byte.
    @inlinable @inline(__always)
    public mutating func write(byte: UInt8) {
        checkRoom(1)
        pointer.pointee = byte
        pointer += 1
    }

    /// Writes `bytes`.
    @inlinable @inline(__always)
    public mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        checkRoom(bytes.count)
        UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: bytes.count)
        pointer += bytes.count
    }

    /// Writes `bytes`.
    @inlinable @inline(__always)
    public mutating func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { write($0) }
    }

    /// Writes the UTF-8 of `string` as it is, without quotes or escapes: for text known to need none, such as keys.
    @inlinable @inline(__always)
    public mutating func writeUnescaped(_ string: String) {
        var string = string
        string.withUTF8 { write($0) }
    }

    /// Writes the decimal digits of `value`, with a sign when negative: ``JSONWriter/decimalLength(_:)`` bytes.
    public mutating func write(int value: Int64) {
        var magnitude = value.magnitude
        let length = JSONWriter.decimalLength(value)
        checkRoom(length)
        var digits = length
        if value < 0 {
            pointer.pointee = UInt8(ascii: "-")
            pointer += 1
            digits -= 1
        }
        var index = digits
        while index > 1 {
            let pair = Int(magnitude % 100)
            magnitude /= 100
            index &-= 2
            pointer[index] = UInt8(truncatingIfNeeded: 0x30 &+ pair / 10)
            pointer[index &+ 1] = UInt8(truncatingIfNeeded: 0x30 &+ pair % 10)
        }
        if index == 1 {
            pointer[0] = UInt8(truncatingIfNeeded: 0x30 &+ magnitude)
        }
        pointer += digits
    }
}

extension JSONWriter {
    /// Appends the `count` bytes that `body` writes through a cursor to `buffer`; the space is reserved once for
    /// the whole. Writing more or fewer than `count` bytes traps. ``decimalLength(_:)`` gives the size of an
    /// integer written with ``ByteCursor/write(int:)``.
    @inlinable
    public static func append(count: Int, to buffer: inout [UInt8], _ body: (inout ByteCursor) -> Void) {
        let start = buffer.count
        // The space is made by copying zeros into it: an array has no cheaper way to grow by uninitialized
        // bytes (appending a repeated zero goes byte by byte). The appends grow the array geometrically.
        var remaining = count
        while remaining > 0 {
            let chunk = min(remaining, zeroBytesCount)
            buffer.append(contentsOf: UnsafeBufferPointer(start: zeroBytes, count: chunk))
            remaining -= chunk
        }
        buffer.withUnsafeMutableBufferPointer { bytes in
            var cursor = ByteCursor(bytes.baseAddress! + start, count: count)
            body(&cursor)
            precondition(cursor.pointer == cursor.end, "ByteCursor: fewer bytes written than reserved")
        }
    }

    @usableFromInline static let zeroBytesCount = 4096

    /// ``zeroBytesCount`` zero bytes, never written.
    @usableFromInline nonisolated(unsafe) static let zeroBytes: UnsafePointer<UInt8> = {
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: zeroBytesCount)
        bytes.initialize(repeating: 0, count: zeroBytesCount)
        return UnsafePointer(bytes)
    }()
}
