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
