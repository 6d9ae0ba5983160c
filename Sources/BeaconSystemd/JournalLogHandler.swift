import CSystemdShims
import Logging

/// A swift-log handler that writes structured journal entries.
///
/// Every entry has `MESSAGE`, `PRIORITY` (from the level), `SYSLOG_IDENTIFIER`, `CODE_FILE`, `CODE_LINE`,
/// `CODE_FUNC`, `SWIFT_LOG_LABEL` and `SWIFT_LOG_SOURCE`, an `ERROR` field when the event carries an error,
/// and one field per metadata key (the handler's, the metadata provider's and the call's, in that order of
/// precedence), named by upper-casing the key and replacing what journald does not accept
/// (see ``JournalEntry/fieldName(_:)``). A key that would collide with one of the fields above gets a
/// `METADATA_` prefix.
///
/// Each entry goes as one datagram in journald's native protocol to journald's socket, or, when `socketPath` is
/// given, to that socket. If sending fails, the entry is written to stderr as a plain line.
/// Use ``SystemdLogging/makeHandler(label:)`` to pick this handler only when stderr is the journal.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    /// The label of the logger this handler belongs to, sent as `SWIFT_LOG_LABEL`.
    public let label: String
    /// Sent as `SYSLOG_IDENTIFIER` (what `journalctl -t` filters on).
    public let syslogIdentifier: String
    private let socketPath: String?

    /// - Parameters:
    ///   - label: The logger's label.
    ///   - socketPath: A datagram socket to send entries to instead of journald (for tests).
    ///   - syslogIdentifier: Defaults to the executable's name.
    ///   - metadataProvider: Defaults to the one given to `LoggingSystem.bootstrap`.
    public init(
        label: String,
        socketPath: String? = nil,
        syslogIdentifier: String? = nil,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        self.label = label
        self.socketPath = socketPath
        self.syslogIdentifier = syslogIdentifier ?? Self.executableName
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let entry = makeEntry(for: event)
        let result = socketPath.map { entry.send(toSocketAt: $0) } ?? entry.sendToJournald()
        if result < 0 {
            writePlainLine(for: event, metadata: mergedMetadata(event.metadata))
        }
    }

    static let ownFieldNames: Set<String> = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "SWIFT_LOG_LABEL",
        "SWIFT_LOG_SOURCE", "ERROR",
    ]

    func makeEntry(for event: LogEvent) -> JournalEntry {
        var entry = JournalEntry()
        entry.append("MESSAGE", event.message.description)
        entry.append("PRIORITY", String(JournalEntry.priority(for: event.level)))
        entry.append("SYSLOG_IDENTIFIER", syslogIdentifier)
        entry.append("CODE_FILE", event.file)
        entry.append("CODE_LINE", String(event.line))
        entry.append("CODE_FUNC", event.function)
        entry.append("SWIFT_LOG_LABEL", label)
        entry.append("SWIFT_LOG_SOURCE", event.source)
        if let error = event.error {
            entry.append("ERROR", String(describing: error))
        }
        for (key, value) in mergedMetadata(event.metadata).sorted(by: { $0.key < $1.key }) {
            var name = JournalEntry.fieldName(key)
            if Self.ownFieldNames.contains(name) {
                name = "METADATA_" + name
            }
            entry.append(name, value.description)
        }
        return entry
    }

    private func mergedMetadata(_ explicit: Logger.Metadata?) -> Logger.Metadata {
        var merged = metadata
        if let provided = metadataProvider?.get() {
            merged.merge(provided) { _, new in new }
        }
        if let explicit {
            merged.merge(explicit) { _, new in new }
        }
        return merged
    }

    private func writePlainLine(for event: LogEvent, metadata: Logger.Metadata) {
        var line = "\(syslogIdentifier): \(event.level) \(label): \(event.message)"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(key)=\(value)"
        }
        line += "\n"
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { beacon_write_all(2, $0.baseAddress, $0.count) }
    }

    private static let executableName: String = {
        guard let path = CommandLine.arguments.first, !path.isEmpty else {
            return "beacond"
        }
        return path.split(separator: "/").last.map(String.init) ?? path
    }()
}
