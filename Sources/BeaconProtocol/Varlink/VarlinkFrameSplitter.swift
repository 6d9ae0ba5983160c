#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Splits a byte stream into NUL-terminated varlink frames, enforcing a maximum frame size.
public struct VarlinkFrameSplitter: Sendable {
    /// The largest frame accepted, in bytes, not counting the NUL.
    public let maxFrameSize: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Where the search for the next NUL resumes, so that bytes are scanned once.
    private var scanIndex = 0

    public init(maxFrameSize: Int) {
        self.maxFrameSize = maxFrameSize
    }

    /// The number of received bytes not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Appends received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if readIndex > 0 && (readIndex == buffer.count || readIndex >= 4096) {
            buffer.removeSubrange(..<readIndex)
            scanIndex -= readIndex
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Appends received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete frame without its NUL, or `nil` when none is complete yet.
    ///
    /// Throws ``VarlinkError/protocolError(_:)`` when a frame is, or would become, longer than ``maxFrameSize``.
    public mutating func nextFrame() throws(VarlinkError) -> [UInt8]? {
        guard let end = try nextFrameEnd() else { return nil }
        let frame = Array(buffer[readIndex..<end])
        readIndex = end + 1
        scanIndex = readIndex
        return frame
    }

    /// Calls `body` with the next complete frame (without its NUL) in place, without copying it; returns `nil`
    /// when no frame is complete yet.
    public mutating func withNextFrame<R>(
        _ body: (UnsafeRawBufferPointer) throws(VarlinkError) -> R
    ) throws(VarlinkError) -> R? {
        guard let end = try nextFrameEnd() else { return nil }
        let start = readIndex
        readIndex = end + 1
        scanIndex = readIndex
        let result: Result<R, VarlinkError> = buffer.withUnsafeBytes { raw in
            Result { () throws(VarlinkError) in try body(UnsafeRawBufferPointer(rebasing: raw[start..<end])) }
        }
        return try result.get()
    }

    private mutating func nextFrameEnd() throws(VarlinkError) -> Int? {
        let start = scanIndex
        let found: Int? = buffer.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, start < bytes.count else { return nil }
            guard let hit = memchr(base + start, 0, bytes.count - start) else { return nil }
            return base.distance(to: UnsafeRawPointer(hit))
        }
        guard let end = found else {
            scanIndex = buffer.count
            if buffer.count - readIndex > maxFrameSize {
                throw VarlinkError.protocolError("message longer than the limit of \(maxFrameSize) bytes")
            }
            return nil
        }
        if end - readIndex > maxFrameSize {
            throw VarlinkError.protocolError("message longer than the limit of \(maxFrameSize) bytes")
        }
        return end
    }
}
