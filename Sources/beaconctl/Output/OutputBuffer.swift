#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Text collected for a file descriptor and written with `write(2)` on ``flush()``.
///
/// One-shot commands flush once at the end; streams flush after every event so that a pipe reader sees each
/// line at once.
struct OutputBuffer {
    let descriptor: Int32
    private var bytes: [UInt8] = []

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Standard output.
    static func standardOutput() -> OutputBuffer { OutputBuffer(descriptor: 1) }

    /// Appends `text` and a newline.
    mutating func line(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        bytes.append(UInt8(ascii: "\n"))
    }

    /// Appends `text` as it is.
    mutating func write(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes everything collected. A write error (a full disk) drops the rest; a reader that closed its pipe
    /// ends the process with `SIGPIPE`, as for any filter.
    mutating func flush() {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                systemWrite(descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if result < 0 {
                if errno == EINTR { continue }
                break
            }
            offset += result
        }
        bytes.removeAll(keepingCapacity: true)
    }

    /// Writes one line to standard error at once.
    static func standardError(_ text: String) {
        var buffer = OutputBuffer(descriptor: 2)
        buffer.line(text)
        buffer.flush()
    }
}

private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
