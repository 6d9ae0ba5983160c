import Foundation
import Synchronization

/// A child process started with `posix_spawn` and reaped with `waitpid`.
///
/// Foundation's `Process` is not used: on Linux it watches its children with dispatch sources and run loops, and
/// many of them started and ended by tests running in parallel can crash libdispatch's event loop. The child gets
/// an empty signal mask and default signal dispositions (the test runner blocks some signals), and descriptors of
/// this process do not leak into it (the pipes made here are close-on-exec on this side).
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream of the child goes.
    public enum Output: Sendable {
        case null
        /// Appended to the file at the path, which is created when missing.
        case file(String)
        /// To a pipe read with ``readOutput()`` (standard output) or ``readError()`` (standard error).
        case capture
    }

    public let pid: pid_t
    public let executable: String
    private let outputDescriptor: Int32
    private let errorDescriptor: Int32
    /// The wait status once the child was reaped.
    private let reaped = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments`; `environment` `nil` passes this process's environment on. `input` is
    /// the child's standard input (then closed; keep it small), or `/dev/null` when `nil`. With `ownProcessGroup`
    /// the child leads a process group of its own (see ``spawnChild(_:_:environment:actions:ownProcessGroup:)``).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        input: [UInt8]? = nil, output: Output = .null, error: Output = .null, ownProcessGroup: Bool = false
    ) throws {
        self.executable = executable
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var ownEnds: [Int32] = []
        var childEnds: [Int32] = []
        func pair() throws -> (own: Int32, child: Int32) {
            // A socket pair, because it can be made close-on-exec in one call (pipe2 is not imported).
            var pair: [Int32] = [-1, -1]
            let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            guard socketpair(AF_UNIX, type, 0, &pair) == 0 else {
                throw FixtureError("socketpair: \(String(cString: strerror(errno)))")
            }
            ownEnds.append(pair[0])
            childEnds.append(pair[1])
            return (pair[0], pair[1])
        }
        func redirect(_ output: Output, to target: Int32) throws -> Int32 {
            switch output {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
                return -1
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
                return -1
            case .capture:
                let ends = try pair()
                posix_spawn_file_actions_adddup2(&actions, ends.child, target)
                return ends.own
            }
        }
        let inputEnd: Int32
        let outputEnd: Int32
        let errorEnd: Int32
        do {
            if input != nil {
                let ends = try pair()
                posix_spawn_file_actions_adddup2(&actions, ends.child, 0)
                inputEnd = ends.own
            } else {
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
                inputEnd = -1
            }
            outputEnd = try redirect(output, to: 1)
            errorEnd = try redirect(error, to: 2)
        } catch {
            for descriptor in ownEnds + childEnds { close(descriptor) }
            throw error
        }
        let (child, result) = spawnChild(
            executable, arguments, environment: environment ?? ProcessInfo.processInfo.environment, actions: &actions,
            ownProcessGroup: ownProcessGroup)
        for descriptor in childEnds { close(descriptor) }
        guard result == 0 else {
            for descriptor in ownEnds { close(descriptor) }
            throw FixtureError("posix_spawn \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
        outputDescriptor = outputEnd
        errorDescriptor = errorEnd
        if let input, inputEnd >= 0 {
            input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    // No SIGPIPE when the child closed its input early.
                    let count = send(inputEnd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    offset += count
                }
            }
            close(inputEnd)
        }
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = wait()
        }
        if outputDescriptor >= 0 { close(outputDescriptor) }
        if errorDescriptor >= 0 { close(errorDescriptor) }
    }

    /// Whether the child has not ended yet (reaps it when it has).
    public var isRunning: Bool {
        // The child is reaped only here, under the lock that ``signal(_:)`` also holds: its pid cannot be reused
        // by another process while a signal is sent to it.
        reaped.withLock { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            if result == 0 || (result < 0 && errno == EINTR) { return true }
            status = result == pid ? raw : Self.unknownStatus
            return false
        }
    }

    /// Sends `number` to the child unless it was reaped.
    public func signal(_ number: Int32) {
        reaped.withLock { status in
            if status == nil { _ = kill(pid, number) }
        }
    }

    /// Waits until the child ends; returns its exit code, the number of the signal that ended it, or -1 when its
    /// status could not be had.
    @discardableResult
    public func wait() -> Int32 {
        while isRunning {
            // Waits for the end without reaping the child: `isRunning` reaps it, and also sorts out an error
            // (EINTR, or a child this process no longer has).
            var info = siginfo_t()
            _ = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
        }
        return Self.code(of: reaped.withLock { $0 } ?? Self.unknownStatus)
    }

    /// The status recorded for a child that `waitpid` no longer knows.
    private static let unknownStatus: Int32 = -1

    /// Waits until the child ends or `limit` passes; returns what ``wait()`` returns, or `nil` when time ran out.
    public func wait(within limit: Duration) -> Int32? {
        let deadline = ContinuousClock.now + limit
        while isRunning {
            if ContinuousClock.now >= deadline { return nil }
            usleep(5_000)
        }
        return wait()
    }

    /// The child's standard output up to its end (``Output/capture`` only).
    public func readOutput() -> [UInt8] { Self.readAll(outputDescriptor) }

    /// The child's standard error up to its end (``Output/capture`` only).
    public func readError() -> [UInt8] { Self.readAll(errorDescriptor) }

    /// Standard output and standard error, both to their ends (both ``Output/capture``); reads whichever has
    /// data, so a child that fills one pipe while the other is being read cannot stall.
    public func readOutputAndError() -> (output: [UInt8], error: [UInt8]) {
        var output: [UInt8] = []
        var error: [UInt8] = []
        var waiting = [
            pollfd(fd: outputDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: errorDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        var chunk = [UInt8](repeating: 0, count: 4096)
        while waiting.contains(where: { $0.fd >= 0 }) {
            let ready = poll(&waiting, nfds_t(waiting.count), -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
            for index in waiting.indices where waiting[index].fd >= 0 && waiting[index].revents != 0 {
                let descriptor = waiting[index].fd
                let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    // poll skips negative descriptors: this one has ended.
                    waiting[index].fd = -1
                    continue
                }
                if index == 0 { output += chunk[..<count] } else { error += chunk[..<count] }
            }
        }
        return (output, error)
    }

    /// Reads standard output until `done` holds for what was read, the output ends, or `limit` passes; returns
    /// what was read (``Output/capture`` only).
    public func readOutput(until done: ([UInt8]) -> Bool, within limit: Duration = .seconds(30)) -> [UInt8] {
        Self.read(outputDescriptor, until: done, within: limit)
    }

    /// Reads standard error like ``readOutput(until:within:)``.
    public func readError(until done: ([UInt8]) -> Bool, within limit: Duration = .seconds(30)) -> [UInt8] {
        Self.read(errorDescriptor, until: done, within: limit)
    }

    private static func read(_ descriptor: Int32, until done: ([UInt8]) -> Bool, within limit: Duration) -> [UInt8] {
        guard descriptor >= 0 else { return [] }
        let deadline = ContinuousClock.now + limit
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !done(bytes) {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { break }
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiting, 1, Int32(clamping: remaining.components.seconds * 1000 + 10))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return bytes
    }

    private static func readAll(_ descriptor: Int32) -> [UInt8] {
        guard descriptor >= 0 else { return [] }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return bytes }
            bytes += chunk[..<count]
        }
    }

    private static func code(of status: Int32) -> Int32 {
        guard status != unknownStatus else { return -1 }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : signal
    }
}

/// Starts `executable` with `posix_spawn`, `actions` and an empty signal mask and default signal dispositions in
/// the child (the test runner blocks some signals); returns the child's pid and posix_spawn's result (0 or an errno).
///
/// `ownProcessGroup` puts the child in a process group of its own. The children of the test runner otherwise share
/// its group, and when a test stops one of them (SIGSTOP) and the group becomes orphaned, the kernel sends SIGHUP
/// and SIGCONT to every member: a daemon would take that SIGHUP for a reload of its configuration and settings.
public func spawnChild(
    _ executable: String, _ arguments: [String], environment: [String: String],
    actions: inout posix_spawn_file_actions_t, ownProcessGroup: Bool = false
) -> (pid: pid_t, result: Int32) {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
    if ownProcessGroup {
        flags |= Int32(POSIX_SPAWN_SETPGROUP)
        posix_spawnattr_setpgroup(&attributes, 0)
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var child: pid_t = 0
    let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
    return (child, result)
}
