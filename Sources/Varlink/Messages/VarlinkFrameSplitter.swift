/// Splits a byte stream into NUL-terminated varlink frames, enforcing a maximum frame size.
///
/// It keeps the bytes; a ``VarlinkFrameScanner`` finds where each frame ends.
public struct VarlinkFrameSplitter: Sendable {
    /// The largest frame accepted, in bytes, not counting the NUL.
    public var maxFrameSize: Int { scanner.maxFrameSize }
    @usableFromInline var buffer: [UInt8] = []
    @usableFromInline var readIndex = 0
    /// Remembers how much of the frame at `readIndex` was scanned, so that bytes are scanned once.
    private var scanner: VarlinkFrameScanner

    public init(maxFrameSize: Int) {
        scanner = VarlinkFrameScanner(maxFrameSize: maxFrameSize)
    }

    /// The number of received bytes not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Appends received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if readIndex > 0 && (readIndex == buffer.count || readIndex >= 4096) {
            buffer.removeSubrange(..<readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Appends received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Takes received bytes and calls `body` with each frame that they complete, in order, until `body` returns
    /// `false`; returns whether it went through them all.
    ///
    /// While the splitter holds nothing, the frames are read where they are, in `bytes`: only an unfinished frame at
    /// the end, or the bytes after the frame that stopped `body`, are copied in and kept. Throws
    /// ``VarlinkError/protocolError(_:)`` when a frame is, or would become, longer than ``maxFrameSize``.
    public mutating func receive(
        _ bytes: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws(VarlinkError) -> Bool
    ) throws(VarlinkError) -> Bool {
        guard bufferedByteCount == 0 else {
            append(bytes)
            while let goOn = try withNextFrame(body) {
                if !goOn { return false }
            }
            return true
        }
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            switch scanner.scan(rest) {
            case .complete(let frameLength):
                offset += frameLength + 1
                guard try body(UnsafeRawBufferPointer(rebasing: rest[..<frameLength])) else {
                    append(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                    return false
                }
            case .incomplete:
                // The scanner remembers how far it looked: the frame's bytes are not scanned again.
                append(rest)
                return true
            case .tooLong:
                throw tooLong
            }
        }
        return true
    }

    /// The next complete frame without its NUL, or `nil` when none is complete yet.
    ///
    /// Throws ``VarlinkError/protocolError(_:)`` when a frame is, or would become, longer than ``maxFrameSize``.
    public mutating func nextFrame() throws(VarlinkError) -> [UInt8]? {
        guard let end = try nextFrameEnd() else { return nil }
        let frame = Array(buffer[readIndex..<end])
        readIndex = end + 1
        return frame
    }

    /// Calls `body` with the next complete frame (without its NUL) in place, without copying it; returns `nil`
    /// when no frame is complete yet. Inlinable, so that it is compiled for the caller's `R`: run unspecialized, it
    /// looked up the metadata of `Result<R, VarlinkError>` twice for every frame.
    @inlinable
    public mutating func withNextFrame<R>(
        _ body: (UnsafeRawBufferPointer) throws(VarlinkError) -> R
    ) throws(VarlinkError) -> R? {
        guard let end = try nextFrameEnd() else { return nil }
        let start = readIndex
        readIndex = end + 1
        let result: Result<R, VarlinkError> = buffer.withUnsafeBytes { raw in
            Result { () throws(VarlinkError) in try body(UnsafeRawBufferPointer(rebasing: raw[start..<end])) }
        }
        return try result.get()
    }

    /// A frame is, or would become, longer than ``maxFrameSize``.
    private var tooLong: VarlinkError { .protocolError("message longer than the limit of \(maxFrameSize) bytes") }

    /// The index of the NUL ending the frame at `readIndex`, or `nil` while it has not arrived.
    @usableFromInline
    mutating func nextFrameEnd() throws(VarlinkError) -> Int? {
        let start = readIndex
        let found = buffer.withUnsafeBytes { scanner.scan(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        switch found {
        case .complete(let frameLength):
            return start + frameLength
        case .incomplete:
            return nil
        case .tooLong:
            throw tooLong
        }
    }
}
