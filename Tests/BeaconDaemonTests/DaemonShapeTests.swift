import Foundation
import Testing

/// The daemon's shape, as `scripts/stored-properties.py` reads it from the source: no type with more than 12 stored
/// properties and no file over 400 lines in `Sources/BeaconDaemon`, so that no part grows back into one object.
@Suite("The daemon's shape")
struct DaemonShapeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("no type of the daemon holds more than 12 stored properties, and no file is over 400 lines")
    func bounds() throws {
        let result = try runProcess(
            "/usr/bin/python3",
            [
                Self.root.appendingPathComponent("scripts/stored-properties.py").path, "--max", "12", "--max-lines",
                "400", Self.root.appendingPathComponent("Sources/BeaconDaemon").path,
            ])
        #expect(result.status == 0, "over the bounds:\n\(result.output)\(result.errors)")
    }

    @Test("the counter sees stored properties, observers and getters apart")
    func counter() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shape-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("Sample.swift")
        try """
        final class Sample {
            let a = 1
            @exclusivity(unchecked) private(set) var b: Int = 0
            var c: Int { a + b }
            var d = [1] {
                didSet { print(d) }
            }
            var e: Int {
                get { a }
                set { print(newValue) }
            }
            static let f = 2
            var g: (Int, String) -> Void = { _, _ in }
            struct Inner {
                var x = "{"
            }
        }
        """.write(to: file, atomically: true, encoding: .utf8)
        let result = try runProcess(
            "/usr/bin/python3", [Self.root.appendingPathComponent("scripts/stored-properties.py").path, file.path])
        #expect(result.output.contains("  1 Inner"))
        #expect(result.output.contains("  4 Sample"))
        let over = try runProcess(
            "/usr/bin/python3",
            [Self.root.appendingPathComponent("scripts/stored-properties.py").path, "--max", "3", file.path])
        #expect(over.status == 1)
    }
}
