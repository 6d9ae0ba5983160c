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

    /// Reads the directories. With `changed`, only the files it names are read again: every other file of the
    /// directories keeps its reading in `previous`, and one that `previous` does not have (created and not yet
    /// closed after writing) is left out until it changes itself. So a file being written when another one
    /// changes is never read half-written, and a lock it held stays. Without `changed`, every file is read.
    func load(changed: Set<String>? = nil, previous: Result? = nil) -> Result {
        var result = Result()
        let kept = changed.flatMap { changed in previous.map { Kept($0, changed: changed) } }
        for directory in paths.schemaDirectories {
            for file in files(in: directory, suffix: ".json", kept: kept, problems: &result.problems) {
                switch file {
                case .read(let path, let text):
                    result.schemas.append(
                        .init(name: path, fromFile: true, file: SchemaFile.parse(text, keyLimits: keyLimits)))
                case .kept(let path):
                    guard let kept else { continue }
                    result.schemas.append(contentsOf: kept.schemas[path] ?? [])
                    result.problems.append(contentsOf: kept.problems[path] ?? [])
                }
            }
        }
        for file in files(in: paths.lockdownDirectory, suffix: nil, kept: kept, problems: &result.problems) {
            switch file {
            case .read(let path, let text):
                result.lockdown.append(
                    .init(
                        path: path,
                        file: LockdownFile.parse(text, keyLimits: keyLimits, maxValueSize: maxValueSize)))
            case .kept(let path):
                guard let kept else { continue }
                result.lockdown.append(contentsOf: kept.lockdown[path] ?? [])
                result.problems.append(contentsOf: kept.problems[path] ?? [])
            }
        }
        return result
    }

    /// The readings of a previous load that a partial one keeps, by path.
    private struct Kept {
        var schemas: [String: [SettingsOverlay.SchemaSource]] = [:]
        var lockdown: [String: [SettingsOverlay.LockdownSource]] = [:]
        var problems: [String: [SettingsOverlay.Problem]] = [:]
        /// The files whose previous reading stands: every file of the previous load that did not change.
        var paths: Set<String> = []

        init(_ previous: Result, changed: Set<String>) {
            for source in previous.schemas where !changed.contains(source.name) {
                schemas[source.name, default: []].append(source)
                paths.insert(source.name)
            }
            for source in previous.lockdown where !changed.contains(source.path) {
                lockdown[source.path, default: []].append(source)
                paths.insert(source.path)
            }
            for problem in previous.problems where !changed.contains(problem.file) {
                problems[problem.file, default: []].append(problem)
                paths.insert(problem.file)
            }
            self.changed = changed
        }

        /// The files a partial load reads: those that changed. A file neither kept nor changed was never read
        /// complete (it was created and is still being written): it waits for its own change.
        var changed: Set<String>
    }

    private enum File {
        case read(path: String, text: [UInt8])
        /// The previous reading of the file stands.
        case kept(path: String)
    }

    /// Whether a file of a settings directory is read: not hidden, not an editor's backup or a package manager's
    /// left-over copy, and with `suffix` when one is given.
    static func isSettingsFile(_ name: String, suffix: String?) -> Bool {
        guard !name.hasPrefix("."), !name.hasSuffix("~"), !name.containsBytes(".dpkg-"), !name.hasSuffix(".swp")
        else { return false }
        if let suffix { return name.hasSuffix(suffix) && name.count > suffix.count }
        return true
    }

    /// The regular files of `directory` with their contents, by name. A directory that does not exist has none. With
    /// `kept` (a partial load), a file whose reading it keeps is not read but reported kept, and one that is neither
    /// kept nor changed is left out.
    private func files(
        in directory: String, suffix: String?, kept: Kept?, problems: inout [SettingsOverlay.Problem]
    ) -> [File] {
        var code: Int32 = 0
        guard let names = POSIX.directoryEntries(directory, error: &code) else {
            if code != ENOENT && code != ENOTDIR {
                problems.append(.init(file: directory, line: 0, problem: "cannot read: \(Self.describe(code))"))
            }
            return []
        }
        var files: [File] = []
        for name in names where Self.isSettingsFile(name, suffix: suffix) {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            if let kept {
                if kept.paths.contains(path) {
                    files.append(.kept(path: path))
                    continue
                }
                guard kept.changed.contains(path) else { continue }
            }
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            guard let text = POSIX.readFile(path, limit: Self.maxFileSize, error: &code) else {
                let reason =
                    code == EFBIG ? "larger than \(Self.maxFileSize) bytes" : "cannot read: \(Self.describe(code))"
                problems.append(.init(file: path, line: 0, problem: reason))
                continue
            }
            files.append(.read(path: path, text: text))
        }
        return files
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
