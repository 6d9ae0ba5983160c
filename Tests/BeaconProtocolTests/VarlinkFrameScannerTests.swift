import BeaconProtocol
import Testing

@Suite("VarlinkFrameScanner")
struct VarlinkFrameScannerTests {
    /// Scans `text` as the bytes received so far of one frame.
    private func scan(_ scanner: inout VarlinkFrameScanner, _ text: String) -> VarlinkFrameScanner.Result {
        Array(text.utf8).withUnsafeBytes { scanner.scan($0) }
    }

    @Test func frameSplitAcrossCalls() {
        var scanner = VarlinkFrameScanner(maxFrameSize: 100)
        #expect(scan(&scanner, "") == .incomplete)
        #expect(scan(&scanner, "{\"a\"") == .incomplete)
        #expect(scanner.scannedByteCount == 4)
        #expect(scan(&scanner, "{\"a\":1}") == .incomplete)
        #expect(scanner.scannedByteCount == 7)
        #expect(scan(&scanner, "{\"a\":1}\0{\"b") == .complete(frameLength: 7))
        // The next frame starts afresh.
        #expect(scanner.scannedByteCount == 0)
        #expect(scan(&scanner, "{\"b") == .incomplete)
        #expect(scan(&scanner, "{\"b\":2}\0") == .complete(frameLength: 7))
    }

    @Test func bytesAreScannedOnce() {
        var scanner = VarlinkFrameScanner(maxFrameSize: 100)
        #expect(scan(&scanner, "abcd") == .incomplete)
        // A NUL among the bytes already scanned is not looked at again: the caller passes the same bytes grown.
        #expect(scan(&scanner, "ab\0def") == .incomplete)
        #expect(scanner.scannedByteCount == 6)
        scanner.reset()
        #expect(scan(&scanner, "ab\0def") == .complete(frameLength: 2))
        // Fewer bytes than were scanned are a new frame.
        #expect(scan(&scanner, "abcdefgh") == .incomplete)
        #expect(scan(&scanner, "x\0") == .complete(frameLength: 1))
    }

    @Test func nulAtOffsetZero() {
        var scanner = VarlinkFrameScanner(maxFrameSize: 8)
        #expect(scan(&scanner, "\0") == .complete(frameLength: 0))
        #expect(scan(&scanner, "\0\0abc") == .complete(frameLength: 0))
        var none = VarlinkFrameScanner(maxFrameSize: 0)
        #expect(scan(&none, "\0") == .complete(frameLength: 0))
        #expect(scan(&none, "a") == .tooLong)
    }

    @Test func exactlyTheLimitAndOneOver() {
        var scanner = VarlinkFrameScanner(maxFrameSize: 8)
        #expect(scan(&scanner, "12345678") == .incomplete)
        #expect(scan(&scanner, "12345678\0") == .complete(frameLength: 8))
        #expect(scan(&scanner, "123456789\0") == .tooLong)
        #expect(scanner.scannedByteCount == 0)
        // The limit counts on the frame, not on the bytes after its NUL.
        #expect(scan(&scanner, "1234\0" + String(repeating: "x", count: 20)) == .complete(frameLength: 4))
    }

    @Test func tooLongWithoutNul() {
        var scanner = VarlinkFrameScanner(maxFrameSize: 8)
        #expect(scan(&scanner, "1234") == .incomplete)
        #expect(scan(&scanner, "123456789") == .tooLong)
        var large = VarlinkFrameScanner(maxFrameSize: 8)
        #expect(scan(&large, String(repeating: "x", count: 1000)) == .tooLong)
        large.maxFrameSize = 2000
        #expect(scan(&large, String(repeating: "x", count: 1000)) == .incomplete)
    }
}
