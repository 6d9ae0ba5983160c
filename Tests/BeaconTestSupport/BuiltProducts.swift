import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The executables `swift build --build-tests` puts next to the test bundle (`.build/debug`).
public enum BuiltProducts {
    /// The path of `name`, or the value of the environment variable `override` when it is set and not empty.
    public static func path(_ name: String, override: String) throws -> String {
        if let explicit = ProcessInfo.processInfo.environment[override], !explicit.isEmpty { return explicit }
        var candidates: [String] = []
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        // From .build/debug/X.xctest (a file, or a bundle directory on Darwin) up to .build/debug.
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent(name).path)
            directory = directory.deletingLastPathComponent()
        }
        candidates.append(
            URL(fileURLWithPath: Bundle.main.bundlePath).deletingLastPathComponent().appendingPathComponent(name).path
        )
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw TestFailure(
            "\(name) is not built next to the tests (looked at \(candidates)); run `swift build --build-tests` first"
                + " or set \(override)"
        )
    }

    /// `$BEACOND_PATH`, else the built `beacond`.
    public static func beacond() throws -> String { try path("beacond", override: "BEACOND_PATH") }

    /// `$BEACONCTL_PATH`, else the built `beaconctl`.
    public static func beaconctl() throws -> String { try path("beaconctl", override: "BEACONCTL_PATH") }

    /// The program `product` of the example package `Examples/PACKAGE`: the value of the environment variable
    /// `override` when it is set and not empty (`make test` sets it), else the example's own debug build when there
    /// is one; `nil` otherwise.
    public static func example(_ package: String, product: String, override: String) -> String? {
        if let explicit = ProcessInfo.processInfo.environment[override], !explicit.isEmpty { return explicit }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let built = root.appendingPathComponent("Examples/\(package)/.build/debug/\(product)").path
        return FileManager.default.isExecutableFile(atPath: built) ? built : nil
    }
}

/// A new private directory under the temporary directory, named `prefix-XXXXXX`.
public func makeTemporaryDirectory(_ prefix: String = "beacon-test") throws -> String {
    let template = (NSTemporaryDirectory() as NSString).appendingPathComponent(prefix + "-XXXXXX")
    var bytes = Array(template.utf8CString)
    guard let made = mkdtemp(&bytes) else { throw TestFailure("mkdtemp: \(String(cString: strerror(errno)))") }
    return String(cString: made)
}
