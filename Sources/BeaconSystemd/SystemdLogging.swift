import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Chooses between journald and plain stderr lines for swift-log.
///
/// ```swift
/// LoggingSystem.bootstrap(SystemdLogging.makeHandler)
/// ```
public enum SystemdLogging {
    /// True when `JOURNAL_STREAM` (`DEVICE:INODE`, set by systemd for services whose output goes to the
    /// journal) names the device and inode of our stderr.
    ///
    /// This is decided from the environment and `fstat(2)`, never from the result of sending an entry: an entry
    /// that could not be sent goes to stderr, which is then the journal's stream anyway.
    public static var stderrIsJournal: Bool {
        guard let value = EnvironmentVariable.value(of: "JOURNAL_STREAM"),
            let stream = JournalStream(value)
        else {
            return false
        }
        var status = stat()
        guard fstat(2, &status) == 0 else {
            return false
        }
        return UInt64(status.st_dev) == stream.device && UInt64(status.st_ino) == stream.inode
    }

    /// A ``JournalLogHandler`` when ``stderrIsJournal``, otherwise swift-log's plain stderr handler.
    public static func makeHandler(label: String) -> any LogHandler {
        makeHandler(label: label, metadataProvider: LoggingSystem.metadataProvider)
    }

    /// As ``makeHandler(label:)``, for `LoggingSystem.bootstrap(_:metadataProvider:)`.
    public static func makeHandler(label: String, metadataProvider: Logger.MetadataProvider?) -> any LogHandler {
        if stderrIsJournal {
            return JournalLogHandler(label: label, metadataProvider: metadataProvider)
        }
        return StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
    }
}

/// The parsed value of `JOURNAL_STREAM`.
struct JournalStream: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(_ value: String) {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else {
            return nil
        }
        self.device = device
        self.inode = inode
    }
}
