import Foundation

/// The executables `swift build --build-tests` puts next to the test bundle (`.build/debug`).
enum BuiltProducts {
    /// The path of `name`, or of `$OVERRIDE` when that environment variable is set.
    static func path(_ name: String, override: String) throws -> String {
        if let explicit = ProcessInfo.processInfo.environment[override], !explicit.isEmpty { return explicit }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        var candidates: [String] = []
        // From .build/debug/X.xctest (a file, or a bundle directory on Darwin) up to .build/debug.
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent(name).path)
            directory = directory.deletingLastPathComponent()
        }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw TestFailure(
            "\(name) is not built next to the tests (looked at \(candidates)); run `swift build --build-tests` first")
    }

    static func beaconctl() throws -> String { try path("beaconctl", override: "BEACONCTL_PATH") }
    static func beacond() throws -> String { try path("beacond", override: "BEACOND_PATH") }
}

/// A new private directory under the temporary directory.
func makeTemporaryDirectory() throws -> String {
    var bytes = Array((NSTemporaryDirectory() + "/beaconctl-test-XXXXXX").utf8CString)
    guard let made = mkdtemp(&bytes) else { throw TestFailure("mkdtemp failed") }
    return String(cString: made)
}
