import BeaconProtocol
import BeaconTestSupport
import Foundation

/// The result of one `beaconctl` run.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String

    /// Standard output split into lines, without the empty one after the last newline.
    var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }

    /// Standard output parsed as one JSON value.
    func json() throws -> JSONValue {
        try JSONValue(parsing: stdout.hasSuffix("\n") ? String(stdout.dropLast()) : stdout)
    }
}

/// Runs the built `beaconctl` as a child process.
enum CLI {
    /// Runs `beaconctl arguments` to its end. `address` is passed as `--address` after the subcommand (`nil`:
    /// none). The environment is ``inheritedEnvironment`` plus `environment`. `input` is the standard input (then
    /// closed; keep it small), or `/dev/null` when `nil`.
    static func run(
        _ arguments: [String], address: String?, environment: [String: String] = [:], input: [UInt8]? = nil
    ) throws -> CLIResult {
        let child = try CLIProcess(arguments, address: address, environment: environment, input: input)
        return try child.finish(timeout: .seconds(60))
    }

    /// The test's environment without the variables that would change beaconctl's behaviour: `BEACON_*` and
    /// `NO_COLOR`.
    static var inheritedEnvironment: [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BEACON_") && $0.key != "NO_COLOR" }
    }
}

/// A running `beaconctl`, read line by line (for streams and `wait`).
///
/// Started with `posix_spawn` on socket pairs that are close-on-exec in this process, so that no other child started
/// meanwhile by a concurrent test holds them open: end of output means the process has ended.
final class CLIProcess {
    let arguments: [String]
    private let pid: pid_t
    private var stdoutDescriptor: Int32
    private var stderrDescriptor: Int32
    private var stdoutBuffer: [UInt8] = []
    private var stderrBuffer: [UInt8] = []
    private var exitStatus: Int32?

    /// Starts `beaconctl arguments` as ``CLI/run(_:address:environment:input:)`` describes.
    init(_ arguments: [String], address: String?, environment: [String: String] = [:], input: [UInt8]? = nil) throws {
        // --address goes right after the subcommand, so that arguments may end with "--" and operands.
        if let address, let command = arguments.first {
            self.arguments = [command, "--address", address] + arguments.dropFirst()
        } else {
            self.arguments = arguments
        }
        var variables = CLI.inheritedEnvironment
        for (key, value) in environment { variables[key] = value }

        var stdoutPipe: [Int32] = [0, 0]
        var stderrPipe: [Int32] = [0, 0]
        var stdinPipe: [Int32] = [-1, -1]
        // Socket pairs, because they can be created close-on-exec in one call (pipe2 is not imported).
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &stdoutPipe) == 0, socketpair(AF_UNIX, type, 0, &stderrPipe) == 0 else {
            throw TestFailure("socketpair: \(String(cString: strerror(errno)))")
        }
        if input != nil {
            guard socketpair(AF_UNIX, type, 0, &stdinPipe) == 0 else {
                for descriptor in stdoutPipe + stderrPipe { close(descriptor) }
                throw TestFailure("socketpair: \(String(cString: strerror(errno)))")
            }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, stdinPipe[1], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        let executable = try BuiltProducts.beaconctl()
        let (child, result) = spawnChild(executable, self.arguments, environment: variables, actions: &actions)
        close(stdoutPipe[1])
        close(stderrPipe[1])
        if stdinPipe[1] >= 0 { close(stdinPipe[1]) }
        guard result == 0 else {
            close(stdoutPipe[0])
            close(stderrPipe[0])
            if stdinPipe[0] >= 0 { close(stdinPipe[0]) }
            throw TestFailure("posix_spawn \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
        stdoutDescriptor = stdoutPipe[0]
        stderrDescriptor = stderrPipe[0]
        if let input {
            // Written whole before anything is read: it must fit the socket's buffer, which a small input does.
            input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    // No SIGPIPE when the child closed its input early.
                    let count = send(
                        stdinPipe[0], bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    offset += count
                }
            }
            close(stdinPipe[0])
        }
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            _ = reap(blocking: true)
        }
        if stdoutDescriptor >= 0 { close(stdoutDescriptor) }
        if stderrDescriptor >= 0 { close(stderrDescriptor) }
    }

    /// Whether the process has not ended yet.
    var isRunning: Bool { reap(blocking: false) == nil }

    /// Sends a signal to the process.
    func signal(_ number: Int32) {
        if exitStatus == nil { kill(pid, number) }
    }

    /// The next line of standard output; throws when none comes within `timeout` or the output ends.
    func nextLine(timeout: Duration = .seconds(30)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = stdoutBuffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: stdoutBuffer[..<newline], as: UTF8.self)
                stdoutBuffer.removeSubrange(...newline)
                return line
            }
            guard stdoutDescriptor >= 0 else { throw TestFailure("output of \(arguments) ended; stderr: \(stderr)") }
            guard try readSome(until: deadline) else {
                throw TestFailure("no line from \(arguments) within \(timeout); stderr: \(stderr)")
            }
        }
    }

    /// Waits until the process ends (killing it after `timeout`) and returns what it printed after the lines
    /// already taken with ``nextLine(timeout:)``.
    func finish(timeout: Duration = .seconds(30)) throws -> CLIResult {
        let deadline = ContinuousClock.now + timeout
        while stdoutDescriptor >= 0 || stderrDescriptor >= 0 {
            guard try readSome(until: deadline) else {
                kill(pid, SIGKILL)
                throw TestFailure("beaconctl \(arguments) did not finish within \(timeout)")
            }
        }
        let status = reap(blocking: true) ?? -1
        let result = CLIResult(
            status: status, stdout: String(decoding: stdoutBuffer, as: UTF8.self), stderr: stderr)
        stdoutBuffer.removeAll()
        return result
    }

    /// What the process wrote to standard error so far.
    var stderr: String { String(decoding: stderrBuffer, as: UTF8.self) }

    /// Reads what either pipe holds; `false` when the deadline passed first.
    private func readSome(until deadline: ContinuousClock.Instant) throws -> Bool {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return false }
        var entries = [
            pollfd(fd: stdoutDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stderrDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        let milliseconds = Int32(
            min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
        let count = poll(&entries, 2, milliseconds)
        if count < 0 && errno != EINTR { throw TestFailure("poll: \(String(cString: strerror(errno)))") }
        guard count > 0 else { return true }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        for (index, entry) in entries.enumerated() where entry.fd >= 0 && entry.revents != 0 {
            let read = chunk.withUnsafeMutableBytes { Glibc.read(entry.fd, $0.baseAddress, $0.count) }
            if read > 0 {
                if index == 0 {
                    stdoutBuffer.append(contentsOf: chunk[..<read])
                } else {
                    stderrBuffer.append(contentsOf: chunk[..<read])
                }
            } else if read == 0 || errno != EINTR {
                close(entry.fd)
                if index == 0 { stdoutDescriptor = -1 } else { stderrDescriptor = -1 }
            }
        }
        return true
    }

    /// The exit status once the process has ended (a signal `n` gives `128 + n`); `nil` while it runs.
    private func reap(blocking: Bool) -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        var result: pid_t
        repeat {
            result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        } while result < 0 && errno == EINTR
        guard result == pid else { return nil }
        let low = status & 0x7f
        exitStatus = low == 0 ? (status >> 8) & 0xff : 128 + low
        return exitStatus
    }
}
