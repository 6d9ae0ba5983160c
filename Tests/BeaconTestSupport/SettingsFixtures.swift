import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Files for the settings tests.
public enum SettingsFixtures {
    /// A schema file: app.editor.font-size is declared on line 3 (an integer 6...72, default 12, with a summary and
    /// a description), app.editor.theme on line 7 (light or dark, default light), app.editor.recent.* on line 8 (a
    /// string, no default).
    public static let editorSchema = """
        {
          "keys": {
            "app.editor.font-size": {
              "type": "integer", "minimum": 6, "maximum": 72, "default": 12,
              "summary": "Font size", "description": "The size of the editor's text, in points."
            },
            "app.editor.theme": {"enum": ["light", "dark"], "default": "light"},
            "app.editor.recent.*": {"type": "string"}
          }
        }
        """

    /// Writes a file the way editors and configuration tools do: a new file renamed over the old one.
    public static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path + ".new", atomically: false, encoding: .utf8)
        guard rename(path + ".new", path) == 0 else { throw TestFailure("cannot rename to \(path)") }
    }
}

/// A daemon whose schema and lockdown directories are new temporary directories, or those of another setup. The
/// directories are removed when the setup that made them is released.
public final class SettingsSetup {
    /// The temporary directory that holds the others.
    public let root: String
    public let schemas: String
    public let lockdown: String
    public let daemon: TestDaemon
    /// The setup whose directories this one reads; kept alive (its directories with it) as long as this one.
    private let sharing: SettingsSetup?

    /// Writes `schemaFiles` and `lockdownFiles` (by name) and starts the daemon on them, watching them unless
    /// `watch` is false. `lockdownDir` is the lockdown directory below the temporary root, created unless
    /// `createLockdown` is false.
    public init(
        watch: Bool = true, schemaFiles: [String: String] = [:], lockdownFiles: [String: String] = [:],
        lockdownDir: String = "lockdown.d", createLockdown: Bool = true
    ) throws {
        root = try makeTemporaryDirectory("beacon-settings-test")
        schemas = root + "/schemas"
        lockdown = root + "/" + lockdownDir
        sharing = nil
        try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        if createLockdown {
            try FileManager.default.createDirectory(atPath: lockdown, withIntermediateDirectories: true)
        }
        for (name, text) in schemaFiles { try SettingsFixtures.write(text, to: schemas + "/" + name) }
        for (name, text) in lockdownFiles { try SettingsFixtures.write(text, to: lockdown + "/" + name) }
        daemon = try TestDaemon(arguments: [
            "--settings-schema-dirs", schemas, "--settings-lockdown-dir", lockdown,
            "--settings-watch", watch ? "true" : "false",
        ])
    }

    /// A second, empty daemon (its own store) with the schema and lockdown files and options of `other`.
    public init(sameFilesAs other: SettingsSetup) throws {
        root = other.root
        schemas = other.schemas
        lockdown = other.lockdown
        sharing = other
        daemon = try TestDaemon(arguments: other.daemon.arguments)
    }

    deinit {
        if sharing == nil { try? FileManager.default.removeItem(atPath: root) }
    }

    /// The daemon's address, for `--address`.
    public var address: String { daemon.address }
}
