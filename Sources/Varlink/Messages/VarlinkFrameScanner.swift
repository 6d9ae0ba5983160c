#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Finds the NUL that ends a varlink frame in bytes that arrive in pieces, scanning every byte once and allocating
/// nothing: the framing rules of every reader of varlink messages, whatever holds the bytes.
///
/// Pass the bytes of the frame received so far, starting at its first byte. When the NUL has not arrived, the scanner
/// remembers how far it looked; the next call passes the same bytes grown, and only the new ones are scanned. A frame
/// may hold up to ``maxFrameSize`` bytes, not counting its NUL.
///
/// ```swift
/// var scanner = VarlinkFrameScanner(maxFrameSize: 1 << 20)
/// switch received.withUnsafeBytes({ scanner.scan($0) }) {
/// case .complete(let length): handle(received[..<length]); received.removeFirst(length + 1)
/// case .incomplete: break  // read more, append it to `received` and scan again
/// case .tooLong: closeTheConnection()
/// }
/// ```
public struct VarlinkFrameScanner: Sendable {
    /// What a ``VarlinkFrameScanner/scan(_:)`` found.
    public enum Result: Sendable, Hashable {
        /// The frame is complete: its NUL is at offset `frameLength` of the bytes scanned. The scanner starts afresh
        /// with the next call, which passes the bytes after that NUL.
        case complete(frameLength: Int)
        /// No NUL yet, and no more than ``VarlinkFrameScanner/maxFrameSize`` bytes.
        case incomplete
        /// The frame is longer than ``VarlinkFrameScanner/maxFrameSize``, whether or not its NUL has arrived.
        case tooLong
    }

    /// The largest frame accepted, in bytes, not counting the NUL.
    public var maxFrameSize: Int
    /// How many bytes of the current frame have been scanned without finding its NUL.
    public private(set) var scannedByteCount = 0

    public init(maxFrameSize: Int) {
        self.maxFrameSize = maxFrameSize
    }

    /// Looks for the NUL ending the frame that starts at the first of `bytes`, in the bytes not scanned before.
    ///
    /// After ``Result/complete(frameLength:)`` or ``Result/tooLong`` the next call starts a new frame.
    public mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Result {
        // Fewer bytes than were scanned: not the same frame grown, so start it again.
        let start = scannedByteCount <= bytes.count ? scannedByteCount : 0
        if start < bytes.count, let base = bytes.baseAddress, let hit = memchr(base + start, 0, bytes.count - start) {
            scannedByteCount = 0
            let frameLength = base.distance(to: UnsafeRawPointer(hit))
            return frameLength > maxFrameSize ? .tooLong : .complete(frameLength: frameLength)
        }
        if bytes.count > maxFrameSize {
            scannedByteCount = 0
            return .tooLong
        }
        scannedByteCount = bytes.count
        return .incomplete
    }

    /// Forgets the bytes scanned so far: the next call starts a new frame.
    public mutating func reset() {
        scannedByteCount = 0
    }
}
