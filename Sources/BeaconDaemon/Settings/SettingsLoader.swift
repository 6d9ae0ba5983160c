import BeaconConfiguration
import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reads the schema and lockdown directories. A file that cannot be read or parsed is a problem of the result, never
/// an error: the other files still apply.
struct SettingsLoader {
    /// Files larger than this are skipped.
    static let maxFileSize = 1 << 20

    var paths: SettingsPaths
    var keyLimits: KeyLimits
    var maxValueSize: Int

    struct Result {
        var schemas: [SettingsOverlay.SchemaSource] = []
        var lockdown: [SettingsOverlay.LockdownSource] = []
        var problems: [SettingsOverlay.Problem] = []
    }

    func load() -> Result {
        var result = Result()
        for directory in paths.schemaDirectories {
            for (path, text) in files(in: directory, suffix: ".json", problems: &result.problems) {
                result.schemas.append(
                    .init(name: path, fromFile: true, file: SchemaFile.parse(text, keyLimits: keyLimits)))
            }
        }
        for (path, text) in files(in: paths.lockdownDirectory, suffix: nil, problems: &result.problems) {
            result.lockdown.append(
                .init(
                    path: path,
                    file: LockdownFile.parse(text, keyLimits: keyLimits, maxValueSize: maxValueSize)))
        }
        return result
    }

    /// Whether a file of a settings directory is read: not hidden, not an editor's backup or a package manager's
    /// left-over copy, and with `suffix` when one is given.
    static func isSettingsFile(_ name: String, suffix: String?) -> Bool {
        guard !name.hasPrefix("."), !name.hasSuffix("~"), !name.containsBytes(".dpkg-"), !name.hasSuffix(".swp")
        else { return false }
        if let suffix { return name.hasSuffix(suffix) && name.count > suffix.count }
        return true
    }

    /// The regular files of `directory` with their contents, by name. A directory that does not exist has none.
    private func files(
        in directory: String, suffix: String?, problems: inout [SettingsOverlay.Problem]
    ) -> [(String, [UInt8])] {
        var code: Int32 = 0
        guard let names = POSIX.directoryEntries(directory, error: &code) else {
            if code != ENOENT && code != ENOTDIR {
                problems.append(.init(file: directory, line: 0, problem: "cannot read: \(Self.describe(code))"))
            }
            return []
        }
        var files: [(String, [UInt8])] = []
        for name in names where Self.isSettingsFile(name, suffix: suffix) {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            guard let text = POSIX.readFile(path, limit: Self.maxFileSize, error: &code) else {
                let reason =
                    code == EFBIG ? "larger than \(Self.maxFileSize) bytes" : "cannot read: \(Self.describe(code))"
                problems.append(.init(file: path, line: 0, problem: reason))
                continue
            }
            files.append((path, text))
        }
        return files
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
