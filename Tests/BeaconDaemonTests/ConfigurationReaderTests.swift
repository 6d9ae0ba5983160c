import BeaconConfiguration
import BeaconProtocol
import Testing

@testable import BeaconDaemon

@Suite("Configuration sources")
struct ConfigurationReaderTests {
    static func file(_ text: String) throws -> ConfigurationFile {
        try ConfigurationFile.parse(Array(text.utf8), path: "test.json")
    }

    @Test("flags are kebab-case, variables BEACON_ and snake case, the file dotted; the first source decides")
    func names() throws {
        let file = try Self.file(#"{"limits": {"maxValueSize": 1000, "slowSubscriber": "disconnect"}}"#)
        let reader = ConfigurationReader(
            arguments: ["beacond", "--limits-max-value-size", "300", "--log-level=debug"],
            environment: ["BEACON_LIMITS_MAX_VALUE_SIZE": "500", "BEACON_LIFECYCLE_SESSION_ID": "c7"],
            file: file
        )
        #expect(reader.int(forKey: "limits.maxValueSize", default: 1) == 300)
        #expect(reader.string(forKey: "log.level") == "debug")
        #expect(reader.string(forKey: "lifecycle.sessionId") == "c7")
        #expect(reader.string(forKey: "limits.slowSubscriber") == "disconnect")
        #expect(reader.string(forKey: "store.path") == nil)
        // A value of the wrong type is no value, without looking at weaker sources.
        #expect(reader.string(forKey: "limits.maxValueSize") == "300")
        let fromFile = ConfigurationReader(arguments: ["beacond"], environment: [:], file: file)
        #expect(fromFile.string(forKey: "limits.maxValueSize") == nil)
        #expect(fromFile.int(forKey: "limits.slowSubscriber", default: 7) == 7)
        // Digits stay in their word; a capital after a small letter starts one.
        let digits = ConfigurationReader(
            arguments: ["beacond", "--a-b2c-d", "flag"], environment: ["BEACON_E_F2G_H": "variable"])
        #expect(digits.string(forKey: "a.b2cD") == "flag")
        #expect(digits.string(forKey: "e.f2gH") == "variable")
    }

    @Test("booleans: a bare flag is true; variables take yes/no/1/0; file numbers count as booleans")
    func booleans() throws {
        let reader = ConfigurationReader(
            arguments: ["beacond", "--lifecycle-enabled", "--lifecycle-sleep-inhibitor", "false"],
            environment: ["BEACON_A_B": "no", "BEACON_A_C": "YES", "BEACON_A_D": "maybe"],
            file: try Self.file(#"{"x": {"one": 1, "zero": 0, "yes": true}}"#)
        )
        #expect(reader.bool(forKey: "lifecycle.enabled", default: false))
        #expect(!reader.bool(forKey: "lifecycle.sleepInhibitor", default: true))
        #expect(!reader.bool(forKey: "a.b", default: true))
        #expect(reader.bool(forKey: "a.c", default: false))
        #expect(reader.bool(forKey: "a.d", default: true))
        #expect(!reader.bool(forKey: "a.d", default: false))
        #expect(reader.bool(forKey: "x.one", default: false))
        #expect(!reader.bool(forKey: "x.zero", default: true))
        #expect(reader.int(forKey: "x.yes", default: 0) == 1)
    }

    @Test("integer arrays from repeated or comma-separated flags, comma-separated variables and file arrays")
    func arrays() throws {
        let reader = ConfigurationReader(
            arguments: ["beacond", "--access-allowed-uids", "1,2", "3"],
            environment: ["BEACON_B": " 4, 5 ", "BEACON_C": "4,x"],
            file: try Self.file(#"{"d": [6, 7.0, true], "e": [], "f": ["x"]}"#)
        )
        #expect(reader.intArray(forKey: "access.allowedUids", default: []) == [1, 2, 3])
        #expect(reader.intArray(forKey: "b", default: []) == [4, 5])
        #expect(reader.intArray(forKey: "c", default: [9]) == [9])
        #expect(reader.intArray(forKey: "d", default: []) == [6, 7, 1])
        #expect(reader.intArray(forKey: "e", default: [9]) == [])
        #expect(reader.intArray(forKey: "f", default: [9]) == [9])
        #expect(throws: ConfigurationError.self) { try Self.file(#"{"g": ["x", 1]}"#) }
        #expect(throws: ConfigurationError.self) { try Self.file(#"{"g": [1, "x"]}"#) }
        #expect(throws: ConfigurationError.self) { try Self.file(#"{"g": [{}]}"#) }
    }
}
