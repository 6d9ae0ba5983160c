/// Writes bytes into space reserved for them, checking the room left with one compare per write.
///
/// Made by ``JSONWriter/append(count:to:_:)``, which reserves the space and hands out a cursor at its start. Each
/// append to a `[UInt8]` checks the array's uniqueness and capacity, which for the short literals of a JSON message
/// costs more than copying them; a message written through one cursor pays that once. When the reservation is too
/// small the cursor goes on in space of its own (the slow path, for a miscount only); the bytes end up in the array
/// in the order they were written either way.
@usableFromInline
package struct ByteCursor {
    /// Where the next byte goes.
    @usableFromInline var pointer: UnsafeMutablePointer<UInt8>
    /// The end of the space being written.
    @usableFromInline var end: UnsafeMutablePointer<UInt8>
    /// The start of the space being written: the reservation in the array, then the cursor's own space.
    @usableFromInline var start: UnsafeMutablePointer<UInt8>
    /// How many bytes went into the array's reservation, once writing moved on to the cursor's own space.
    @usableFromInline var reservedWritten = 0
    /// Whether `start` is space the cursor allocated (and deallocates in ``JSONWriter/append(count:to:_:)``).
    @usableFromInline var ownsSpace = false

    @usableFromInline
    init(_ start: UnsafeMutablePointer<UInt8>, count: Int) {
        self.start = start
        pointer = start
        end = start + count
    }

    /// Makes room for `count` more contiguous bytes at `pointer`.
    @inlinable @inline(__always)
    mutating func reserve(_ count: Int) {
        if end - pointer < count { grow(count) }
    }

    /// Moves on to space of the cursor's own with room for at least `count` more bytes, keeping what was written
    /// there before.
    @usableFromInline @inline(never)
    mutating func grow(_ count: Int) {
        let used = pointer - start
        let capacity = Swift.max(used + count, 2 * (end - start), 256)
        let space = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        if ownsSpace {
            space.initialize(from: start, count: used)
            start.deallocate()
            pointer = space + used
        } else {
            reservedWritten = used
            ownsSpace = true
            pointer = space
        }
        start = space
        end = space + capacity
    }

    /// Writes the bytes of an ASCII literal.
    @inlinable @inline(__always)
    package mutating func write(_ literal: StaticString) {
        write(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Writes one byte.
    @inlinable @inline(__always)
    package mutating func write(byte: UInt8) {
        reserve(1)
        pointer.pointee = byte
        pointer += 1
    }

    /// Writes `bytes`.
    @inlinable @inline(__always)
    package mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        reserve(bytes.count)
        UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: bytes.count)
        pointer += bytes.count
    }

    /// Writes `bytes`.
    @inlinable @inline(__always)
    package mutating func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { write($0) }
    }

    /// Writes the UTF-8 of `string` as it is, without quotes or escapes: for text known to need none, such as keys.
    @inlinable @inline(__always)
    package mutating func writeUnescaped(_ string: String) {
        var string = string
        string.withUTF8 { write($0) }
    }

    /// Writes the decimal digits of `value`, with a sign when negative: ``JSONWriter/decimalLength(_:)`` bytes.
    @usableFromInline
    package mutating func write(int value: Int64) {
        var magnitude = value.magnitude
        let length = JSONWriter.decimalLength(value)
        reserve(length)
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
    /// Appends the bytes that `body` writes through a cursor to `buffer`; `count` bytes are reserved once for the
    /// whole. `count` only sizes the reservation: fewer bytes leave the array shorter, more make the cursor grow
    /// its space (slower, but never wrong). ``decimalLength(_:)`` gives the size of an integer written with
    /// ``ByteCursor/write(int:)``.
    @inlinable
    package static func append(count: Int, to buffer: inout [UInt8], _ body: (inout ByteCursor) -> Void) {
        let start = buffer.count
        let reserved = Swift.max(count, 0)
        // The space is made by copying zeros into it: an array has no cheaper way to grow by uninitialized
        // bytes (appending a repeated zero goes byte by byte). The appends grow the array geometrically.
        var remaining = reserved
        while remaining > 0 {
            let chunk = min(remaining, zeroBytesCount)
            buffer.append(contentsOf: UnsafeBufferPointer(start: zeroBytes, count: chunk))
            remaining -= chunk
        }
        let cursor = buffer.withUnsafeMutableBufferPointer { bytes in
            // An empty array may have no storage; then nothing is reserved and the first write grows.
            let base = bytes.baseAddress.map { $0 + start } ?? UnsafeMutablePointer(mutating: zeroBytes)
            var cursor = ByteCursor(base, count: reserved)
            body(&cursor)
            return cursor
        }
        if cursor.ownsSpace || cursor.pointer != cursor.end {
            finishAppend(cursor, reserved: reserved, to: &buffer)
        }
    }

    /// Trims the reservation in `buffer` to the bytes written into it, and appends those the cursor wrote into
    /// space of its own.
    @usableFromInline @inline(never)
    static func finishAppend(_ cursor: ByteCursor, reserved: Int, to buffer: inout [UInt8]) {
        let written = cursor.ownsSpace ? cursor.reservedWritten : cursor.pointer - cursor.start
        buffer.removeLast(reserved - written)
        guard cursor.ownsSpace else { return }
        buffer.append(contentsOf: UnsafeBufferPointer(start: cursor.start, count: cursor.pointer - cursor.start))
        cursor.start.deallocate()
    }

    @usableFromInline static let zeroBytesCount = 4096

    /// ``zeroBytesCount`` zero bytes, never written.
    @usableFromInline nonisolated(unsafe) static let zeroBytes: UnsafePointer<UInt8> = {
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: zeroBytesCount)
        bytes.initialize(repeating: 0, count: zeroBytesCount)
        return UnsafePointer(bytes)
    }()
}
