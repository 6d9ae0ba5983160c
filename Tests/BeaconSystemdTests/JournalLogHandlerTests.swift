import Logging
import Testing

@testable import BeaconSystemd

struct JournalLogHandlerTests {
    private func logger(sendingTo journal: DatagramReceiver, level: Logger.Level = .info) -> Logger {
        let handler = JournalLogHandler(
            label: "io.beacon.test",
            socketPath: journal.path,
            syslogIdentifier: "beacond-test",
            metadataProvider: nil
        )
        var logger = Logger(label: "io.beacon.test") { _ in handler }
        logger.logLevel = level
        return logger
    }

    @Test func entryCarriesEveryField() throws {
        let journal = try DatagramReceiver()
        var logger = logger(sendingTo: journal)
        logger[metadataKey: "client-id"] = "42"

        let line = #line + 1
        logger.warning(
            "first line\nsecond line", metadata: ["request.path": "/a b", "count": .stringConvertible(3)],
            source: "Tests")

        let bytes = try #require(try journal.receive())
        let entry = try JournalDatagram(bytes)
        #expect(entry["MESSAGE"] == "first line\nsecond line")
        #expect(entry.fields.first { $0.name == "MESSAGE" }?.binary == true)
        #expect(entry["PRIORITY"] == "4")
        #expect(entry["SYSLOG_IDENTIFIER"] == "beacond-test")
        #expect(entry["CODE_FILE"] == #fileID)
        #expect(entry["CODE_LINE"] == String(line))
        #expect(entry["CODE_FUNC"] == #function)
        #expect(entry["SWIFT_LOG_LABEL"] == "io.beacon.test")
        #expect(entry["SWIFT_LOG_SOURCE"] == "Tests")
        #expect(entry["CLIENT_ID"] == "42")
        #expect(entry["REQUEST_PATH"] == "/a b")
        #expect(entry["COUNT"] == "3")
        #expect(entry.fields.count == 11)
        #expect(entry.fields.allSatisfy { !$0.binary || $0.name == "MESSAGE" })
    }

    @Test func metadataNamesAreMadeValidForJournald() throws {
        let journal = try DatagramReceiver()
        let logger = logger(sendingTo: journal)

        logger.info(
            "names",
            metadata: [
                "_trusted": "a", "9lives": "b", "message": "c", "Ünïcode key": "d", "___": "e",
                String(repeating: "k", count: 80): "f", "multi": "line\none",
            ]
        )

        let entry = try JournalDatagram(try #require(try journal.receive()))
        #expect(entry["MESSAGE"] == "names")
        #expect(entry["TRUSTED"] == "a")
        #expect(entry["F_9LIVES"] == "b")
        #expect(entry["METADATA_MESSAGE"] == "c")
        #expect(entry["N_CODE_KEY"] == "d")
        #expect(entry["FIELD"] == "e")
        #expect(entry[String(repeating: "K", count: 64)] == "f")
        #expect(entry["MULTI"] == "line\none")
        #expect(entry.fields.first { $0.name == "MULTI" }?.binary == true)
        for field in entry.fields {
            #expect(field.name.count <= 64)
            #expect(field.name.first != "_")
            #expect(field.name.first.map { !$0.isNumber } == true)
            #expect(field.name.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" })
        }
    }

    @Test(arguments: [
        (Logger.Level.trace, "7"), (.debug, "7"), (.info, "6"), (.notice, "5"), (.warning, "4"), (.error, "3"),
        (.critical, "2"),
    ])
    func levelBecomesSyslogPriority(level: Logger.Level, priority: String) throws {
        let journal = try DatagramReceiver()
        let logger = logger(sendingTo: journal, level: .trace)
        logger.log(level: level, "at \(level)")
        let entry = try JournalDatagram(try #require(try journal.receive()))
        #expect(entry["MESSAGE"] == "at \(level)")
        #expect(entry["PRIORITY"] == priority)
    }

    @Test func messagesBelowTheLevelAreNotSent() throws {
        let journal = try DatagramReceiver()
        let logger = logger(sendingTo: journal, level: .notice)
        logger.info("dropped")
        logger.notice("kept")
        let entry = try JournalDatagram(try #require(try journal.receive()))
        #expect(entry["MESSAGE"] == "kept")
        #expect(try journal.receive(timeout: .zero) == nil)
    }

    @Test func callMetadataOverridesProviderWhichOverridesHandlerMetadata() throws {
        let journal = try DatagramReceiver()
        let provider = Logger.MetadataProvider { ["shared": "provider", "provided": "yes"] }
        var handler = JournalLogHandler(label: "l", socketPath: journal.path, metadataProvider: provider)
        handler.metadata = ["shared": "handler", "own": "yes"]
        let logger = Logger(label: "l") { _ in handler }

        logger.info("one")
        logger.info("two", metadata: ["shared": "call"])

        let first = try JournalDatagram(try #require(try journal.receive()))
        #expect(first["SHARED"] == "provider")
        #expect(first["PROVIDED"] == "yes")
        #expect(first["OWN"] == "yes")
        let second = try JournalDatagram(try #require(try journal.receive()))
        #expect(second["MESSAGE"] == "two")
        #expect(second["SHARED"] == "call")
    }

    @Test func errorIsSentAsField() throws {
        struct StoreUnavailable: Error, CustomStringConvertible {
            var description: String { "store unavailable" }
        }
        let journal = try DatagramReceiver()
        let logger = logger(sendingTo: journal)
        logger.error("cannot open", error: StoreUnavailable())
        let entry = try JournalDatagram(try #require(try journal.receive()))
        #expect(entry["MESSAGE"] == "cannot open")
        #expect(entry["ERROR"] == "store unavailable")
    }

    @Test func defaultSyslogIdentifierIsTheExecutableName() {
        let handler = JournalLogHandler(label: "l")
        #expect(!handler.syslogIdentifier.isEmpty)
        #expect(!handler.syslogIdentifier.contains("/"))
    }

    @Test(arguments: [
        ("client", "CLIENT"), ("a.b-c d", "A_B_C_D"), ("_x", "X"), ("__", "FIELD"), ("", "FIELD"), ("0x", "F_0X"),
        ("ALREADY_OK_9", "ALREADY_OK_9"), ("é", "FIELD"),
    ])
    func fieldNames(key: String, expected: String) {
        #expect(JournalEntry.fieldName(key) == expected)
    }
}
