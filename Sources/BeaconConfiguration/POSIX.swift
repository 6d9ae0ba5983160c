#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The few file-system and process facts the daemon and its configuration need, straight from the C library.
@usableFromInline
package enum POSIX {
    /// The process environment, as `ProcessInfo.environment` gives it: `NAME=value` entries of `environ`; the
    /// first of duplicate names wins, as with `getenv`.
    @usableFromInline
    package static func environment() -> [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            // The bytes, not the characters: no grapheme breaking for each variable at every start.
            if let equals = text.utf8.firstIndex(of: UInt8(ascii: "=")) {
                let name = String(text[..<equals])
                if result[name] == nil {
                    result[name] = String(text[text.index(after: equals)...])
                }
            }
            entry += 1
        }
        return result
    }

    /// The current user's home directory from the user database, else `/`.
    package static func homeDirectory() -> String {
        var user = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        let status = getpwuid_r(getuid(), &user, &buffer, buffer.count, &found)
        guard status == 0, found != nil, let directory = user.pw_dir else { return "/" }
        let path = String(cString: directory)
        return path.isEmpty ? "/" : path
    }

    /// The directory part of `path`: `/a/b` for `/a/b/c`, `/` for `/c`, empty for `c` (trailing slashes ignored).
    package static func parentDirectory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        if slash == trimmed.startIndex { return "/" }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent = parent.dropLast() }
        return String(parent)
    }

    /// Creates `path` and any missing parents with `mode` (exactly, whatever the umask); an existing directory
    /// is left as it is.
    package static func createDirectories(_ path: String, mode: mode_t) throws(POSIXError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw POSIXError(path: path, code: ENOTDIR) }
            return
        }
        let parent = parentDirectory(of: path)
        if !parent.isEmpty, parent != path {
            try createDirectories(parent, mode: mode)
        }
        if mkdir(path, mode) != 0 {
            let code = errno
            guard code == EEXIST, stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw POSIXError(path: path, code: code)
            }
            return
        }
        if chmod(path, mode) != 0 {
            throw POSIXError(path: path, code: errno)
        }
    }

    /// The contents of the file at `path`, at most `limit` bytes; `nil` with the `errno` in `error` when it cannot be
    /// read (`EFBIG` when it is larger than `limit`).
    package static func readFile(_ path: String, limit: Int = Int.max, error: inout Int32) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            error = errno
            return nil
        }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                error = errno
                return nil
            }
            if count == 0 { return contents }
            contents.append(contentsOf: chunk[0..<count])
            if contents.count > limit {
                error = EFBIG
                return nil
            }
        }
    }

    /// The names in the directory at `path`, sorted, without `.` and `..`; `nil` with the `errno` in `error` when it
    /// cannot be read.
    package static func directoryEntries(_ path: String, error: inout Int32) -> [String]? {
        guard let directory = opendir(path) else {
            error = errno
            return nil
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Runs `body` on a new, detached thread; false when no thread could be started.
    package static func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
        let job = Unmanaged.passRetained(ThreadJob(body: body))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { raw in
                Unmanaged<ThreadJob>.fromOpaque(raw!).takeRetainedValue().body()
                return nil
            }, job.toOpaque())
        guard result == 0 else {
            job.release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    private final class ThreadJob {
        let body: @Sendable () -> Void
        init(body: @escaping @Sendable () -> Void) {
            self.body = body
        }
    }

    /// Writes all of `text` to standard error.
    package static func writeStandardError(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { writeAll(2, $0) }
    }

    /// Writes all of `bytes` to `fd`, again after an interrupted or short write; false when a write fails.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// A failed system call on a path.
    package struct POSIXError: Error, CustomStringConvertible {
        package var path: String
        package var code: Int32
        package var description: String { "cannot create \(path): \(String(cString: strerror(code)))" }
    }
}
